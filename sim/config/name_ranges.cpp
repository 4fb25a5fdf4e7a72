#include "name_ranges.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

namespace gradsync::config {

namespace {

struct Choice {
  long long value;
  int width;  // zero-padding width (0 = none)
};

// Indices stay far from the integer limits, so ranges cannot overflow while they expand.
constexpr long long kMaxIndex = 999'999'999'999'999;

long long parse_index(const std::string& s, const std::string& pattern) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < 0)
    throw std::invalid_argument(fmt::format("bad index '{}' in name pattern '{}'", s, pattern));
  if (v > kMaxIndex)
    throw std::invalid_argument(fmt::format("index {} in name pattern '{}' is above {}", s,
                                            pattern, kMaxIndex));
  return v;
}

std::vector<Choice> parse_bracket(const std::string& body, const std::string& pattern,
                                  std::size_t limit) {
  std::vector<Choice> out;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = body.find(',', start);
    const std::string part = body.substr(start, comma == std::string::npos ? std::string::npos
                                                                           : comma - start);
    const std::size_t dash = part.find('-');
    if (dash == std::string::npos) {
      if (out.size() >= limit)
        throw std::invalid_argument(
            fmt::format("name pattern '{}' expands to more than {} names", pattern, limit));
      out.push_back({parse_index(part, pattern), part.size() > 1 && part[0] == '0'
                                                     ? static_cast<int>(part.size()) : 0});
    } else {
      const std::string lo_s = part.substr(0, dash);
      const std::string hi_s = part.substr(dash + 1);
      const long long lo = parse_index(lo_s, pattern);
      const long long hi = parse_index(hi_s, pattern);
      if (hi < lo)
        throw std::invalid_argument(
            fmt::format("range [{}] runs backwards in name pattern '{}'", part, pattern));
      // Bound the whole bracket, not each range: "[0-999999,0-999999,...]" must not
      // allocate millions of choices per part before the product check below.
      if (static_cast<std::size_t>(hi - lo) >= limit - std::min(limit, out.size()))
        throw std::invalid_argument(fmt::format(
            "range [{}] in '{}' expands to more than {} names", part, pattern, limit));
      const int width = lo_s.size() > 1 && lo_s[0] == '0' ? static_cast<int>(lo_s.size()) : 0;
      for (long long k = 0; k <= hi - lo; ++k) out.push_back({lo + k, width});
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<ExpandedName> expand_name_pattern(const std::string& pattern, std::size_t limit) {
  std::vector<ExpandedName> names{{"", {}}};
  std::size_t i = 0;
  while (i < pattern.size()) {
    const std::size_t open = pattern.find('[', i);
    const std::size_t stray = pattern.find(']', i);
    if (stray != std::string::npos && (open == std::string::npos || stray < open))
      throw std::invalid_argument(fmt::format("unmatched ']' in name pattern '{}'", pattern));
    const std::string literal = pattern.substr(i, open == std::string::npos ? std::string::npos
                                                                            : open - i);
    for (auto& n : names) n.name += literal;
    if (open == std::string::npos) break;
    const std::size_t close = pattern.find(']', open);
    if (close == std::string::npos)
      throw std::invalid_argument(fmt::format("unmatched '[' in name pattern '{}'", pattern));
    const auto choices = parse_bracket(pattern.substr(open + 1, close - open - 1), pattern, limit);
    if (names.size() * choices.size() > limit)
      throw std::invalid_argument(
          fmt::format("name pattern '{}' expands to more than {} names", pattern, limit));
    std::vector<ExpandedName> next;
    next.reserve(names.size() * choices.size());
    for (const auto& n : names)
      for (const Choice& c : choices) {
        ExpandedName e = n;
        e.name += c.width > 0 ? fmt::format("{:0{}}", c.value, c.width) : std::to_string(c.value);
        e.indices.push_back(c.value);
        next.push_back(std::move(e));
      }
    names = std::move(next);
    i = close + 1;
  }
  if (names.size() == 1 && names[0].name.empty())
    throw std::invalid_argument("empty device name");
  return names;
}

}  // namespace gradsync::config
