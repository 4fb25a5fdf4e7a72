// CSV text as results.csv holds it (csv_text.hpp).
#include "csv_text.hpp"

#include "gradsync/units/config_error.hpp"

namespace gradsync::sweep {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& file) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, in_quotes = false, any = false;
  int line = 1, quote_line = 0, quote_col = 0, col = 0;
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
    quoted = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++col;
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
        ++col;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') {
          ++line;
          col = 0;
        }
        field += c;
      }
      continue;
    }
    any = true;
    if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
      quote_line = line;
      quote_col = col;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_field();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
      ++line;
      col = 0;
    } else {
      field += c;
    }
  }
  if (in_quotes)
    throw ConfigError(SourceMark{file, quote_line, quote_col}, "unterminated quoted field");
  if (any || !row.empty()) {
    end_field();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gradsync::sweep
