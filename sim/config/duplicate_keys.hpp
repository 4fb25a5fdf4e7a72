// yaml-cpp 0.7 silently keeps the first of two equal keys in a mapping, silently ignores every
// document after the first, and loops forever on a document that starts with ','. This pass
// walks the parse events before the regular load and turns each of these into a ConfigError.
#pragma once

#include <string>

namespace gradsync::config {

// Throws ConfigError "file:line:col: error: duplicate key 'x' (first given at line L)", or
// "... a second YAML document", or "... unexpected ','". Syntax errors in the first document
// are left for the regular load to report, except a '[' or '{' never closed, which is reported
// at the bracket (yaml-cpp would point past the end of the file).
void reject_duplicate_keys(const std::string& text, const std::string& file);

}  // namespace gradsync::config
