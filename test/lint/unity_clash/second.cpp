// Fixture of check_unity_names.py's test: file-local names that first.cpp defines too.
#include <string>

#define SCALE 3

namespace demo {
namespace {

using Text = std::string;

int gbps(int rate) { return rate; }

struct Row {
  double size;
};

}  // namespace

static int helper() { return SCALE; }

constexpr int kLimit = 8;

// Public functions of the same name in two files are declarations of one function: not local.
int shared_entry_point();

int second() { return helper() + kLimit + gbps(1) + static_cast<int>(Row{1.0}.size); }
Text second_name() { return "second"; }

}  // namespace demo
