// Device-name patterns of the explicit topology form: "gpu[0-15]" expands to gpu0 … gpu15,
// "n[0-1].gpu[0-3]" to n0.gpu0 … n1.gpu3 (later brackets vary fastest), "sw[0,2,5-6]" to
// sw0 sw2 sw5 sw6, and "g[00-11]" keeps the zero padding (g00 … g11).
#pragma once

#include <string>
#include <vector>

namespace gradsync::config {

struct ExpandedName {
  std::string name;
  std::vector<long long> indices;  // the value taken by each bracket, left to right
};

// Throws std::invalid_argument with a readable reason on a malformed pattern or when the
// expansion exceeds `limit` names.
[[nodiscard]] std::vector<ExpandedName> expand_name_pattern(const std::string& pattern,
                                                            std::size_t limit);

}  // namespace gradsync::config
