// CSV text as results.csv holds it (RFC 4180): a field written, and a file's rows read back
// (the regression gate reads an earlier results.csv).
#pragma once

#include <string>
#include <vector>

namespace gradsync::sweep {

// RFC 4180: fields with a comma, a quote or a line break are quoted, quotes doubled.
[[nodiscard]] std::string csv_field(const std::string& text);
// Rows of a CSV text; ConfigError at file:line:col for an unterminated quote.
[[nodiscard]] std::vector<std::vector<std::string>> parse_csv(const std::string& text,
                                                              const std::string& file);

}  // namespace gradsync::sweep
