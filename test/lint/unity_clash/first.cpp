// Fixture of check_unity_names.py's test: file-local names that second.cpp defines too.
#include <string>

#define SCALE 2

namespace demo {
namespace {

using Text = std::string;  // the same alias in second.cpp: allowed

double gbps(double bytes_per_s) { return bytes_per_s / 1e9; }  // another signature there

struct Row {
  int size;
};

}  // namespace

static int helper() { return SCALE; }

constexpr int kLimit = 4;

int first() { return helper() + kLimit + static_cast<int>(gbps(1e9)) + Row{1}.size; }
Text first_name() { return "first"; }

}  // namespace demo
