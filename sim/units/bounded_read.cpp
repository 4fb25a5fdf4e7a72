// read_file_bounded (bounded_read.hpp).
#include "gradsync/units/bounded_read.hpp"

#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync {

std::string read_file_bounded(const std::string& path, std::size_t max_bytes,
                              const std::string& limit_text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(SourceMark{path, 0, 0}, "is a directory, expected a file");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!in) throw ConfigError(SourceMark{path, 0, 0}, "cannot open file");
  auto too_large = [&] {
    return ConfigError(SourceMark{path, 0, 0},
                       fmt::format("file is larger than {}; not a gradsync input", limit_text));
  };
  struct stat st {};
  if (::fstat(::fileno(in.get()), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) > max_bytes)
    throw too_large();
  std::string text;
  std::array<char, 1 << 16> buffer{};
  while (true) {
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), in.get());
    text.append(buffer.data(), n);
    if (text.size() > max_bytes) throw too_large();  // a pipe or device with no size
    if (n < buffer.size()) break;
  }
  if (std::ferror(in.get())) throw ConfigError(SourceMark{path, 0, 0}, "cannot read file");
  return text;
}

}  // namespace gradsync
