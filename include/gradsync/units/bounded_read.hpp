// Reading a whole input file with a bound checked before memory is spent: the file's size when
// it has one, else (a pipe, /dev/zero) while reading. Inputs gradsync reads are KiB to a few
// MiB; a file over the bound is a wrong file, reported, not read.
#pragma once

#include <cstddef>
#include <string>

namespace gradsync {

// The file's bytes. ConfigError "PATH: error: ..." when it is a directory, cannot be opened,
// or holds more than `max_bytes` (the message names the bound as `limit_text`, e.g. "16 MiB").
[[nodiscard]] std::string read_file_bounded(const std::string& path, std::size_t max_bytes,
                                            const std::string& limit_text);

}  // namespace gradsync
