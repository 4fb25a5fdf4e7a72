// yaml-cpp 0.7 silently keeps the first of two equal keys in a mapping. This pass walks the
// parse events and rejects duplicates with the position of the second occurrence.
#pragma once

#include <string>

namespace gradsync::config {

// Throws ConfigError "file:line:col: error: duplicate key 'x' (first at line L)".
// Syntax errors are left for the regular load to report, except a '[' or '{' never closed, which
// is reported at the bracket (yaml-cpp would point past the end of the file).
void reject_duplicate_keys(const std::string& text, const std::string& file);

}  // namespace gradsync::config
