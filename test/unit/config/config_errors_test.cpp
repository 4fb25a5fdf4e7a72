// Bad input, one class of mistake at a time: every problem is a ConfigError
// whose message reads "file:line:col: error: ...", 1-based, at the offending key or value (the
// parent mapping for a missing key); unknown keys name the closest valid key; duplicate keys
// are rejected. The files under test/data/bad announce their expected error on their first
// line, "# expect: LINE:COL: substring"; test/cli/cli_errors_test.sh reads the same headers and
// checks the CLI prints exactly that and exits 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"

namespace {

namespace fs = std::filesystem;
using gradsync::ConfigError;
using gradsync::load_topology_file;
using gradsync::load_topology_text;

const fs::path kBadDir = fs::path(GRADSYNC_SOURCE_DIR) / "test" / "data" / "bad";

struct Expectation {
  fs::path file;
  int line = 0;
  int column = 0;
  std::string substring;
};

// Reads "# expect: LINE:COL: substring" from the first line of `file`.
std::optional<Expectation> expectation_of(const fs::path& file) {
  std::ifstream in(file);
  std::string header;
  std::getline(in, header);
  static const std::regex pattern(R"(^# expect: ([0-9]+):([0-9]+): (.+)$)");
  std::smatch m;
  if (!std::regex_match(header, m, pattern)) return std::nullopt;
  return Expectation{file, std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].str()};
}

std::vector<fs::path> bad_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kBadDir))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The ConfigError that loading `text` throws (a failed check when it loads).
std::optional<ConfigError> error_of(const std::string& text,
                                    const std::string& name = "inline.yaml") {
  try {
    (void)load_topology_text(text, name);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL_CHECK("loaded without error:\n" << text);
  return std::nullopt;
}

// Checks the error of `text` is at line:column and its reason contains `substring`.
void check_error(const std::string& text, int line, int column, const std::string& substring) {
  INFO("input:\n" << text);
  const auto e = error_of(text);
  if (!e) return;
  INFO("message: " << std::string(e->what()));
  CHECK(e->where().file == "inline.yaml");
  CHECK(e->where().line == line);
  CHECK(e->where().column == column);
  CHECK(e->reason().find(substring) != std::string::npos);
}

// A valid template to break in one place at a time.
const std::string kNode =
    "node:\n"
    "  gpus: 8\n"
    "  intra: {fabric: nvlink, bandwidth: 450GB/s, latency: 1us}\n"
    "  nics: 8\n"
    "  nic_bandwidth: 400Gbps\n"
    "  pcie: {bandwidth: 64GB/s, latency: 1us}\n";
const std::string kNetwork =
    "network:\n"
    "  fabric: infiniband\n"
    "  shape: single-switch\n"
    "  link_latency: 500ns\n"
    "  switch_latency: 300ns\n";
const std::string kTemplate = "nodes: 2\n" + kNode + kNetwork;

const std::string kExplicit =
    "devices:\n"
    "  - {name: \"gpu[0-3]\", kind: gpu}\n"
    "  - {name: sw0, kind: switch}\n"
    "links:\n"
    "  - {between: [\"gpu[0-3]\", sw0], fabric: infiniband, bandwidth: 25GB/s, latency: 1us}\n";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "'" << from << "' is not in the text");
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the base inputs of these tests are valid") {
  CHECK_NOTHROW((void)load_topology_text(kTemplate, "inline.yaml"));
  CHECK_NOTHROW((void)load_topology_text(kExplicit, "inline.yaml"));
}

TEST_CASE("every file in test/data/bad fails with the error its header announces") {
  const auto files = bad_files();
  REQUIRE(files.size() >= 60);
  for (const fs::path& file : files) {
    INFO("file: " << file.filename().string());
    const auto expected = expectation_of(file);
    REQUIRE_MESSAGE(expected.has_value(), "first line is not '# expect: LINE:COL: substring'");
    try {
      (void)load_topology_file(file);
      FAIL_CHECK("loaded without error");
    } catch (const ConfigError& e) {
      INFO("message: " << std::string(e.what()));
      CHECK(e.where().file == file.string());
      CHECK(e.where().line == expected->line);
      CHECK(e.where().column == expected->column);
      CHECK(e.reason().find(expected->substring) != std::string::npos);
      // The message is one line in the compiler convention.
      const std::string what = e.what();
      CHECK(what == file.string() + ":" + std::to_string(expected->line) + ":" +
                        std::to_string(expected->column) + ": error: " + e.reason());
      CHECK(what.find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("every class of mistake has a bad file") {
  // One file per class named in the test plan; deleting one must not go unnoticed.
  const std::vector<std::string> required{
      "yaml_bad_indentation", "yaml_unclosed_brace", "yaml_unclosed_bracket", "yaml_tab_indent",
      "empty_file", "top_level_list", "unknown_key_top", "unknown_key_node", "unknown_key_intra",
      "unknown_key_network", "unknown_key_device", "unknown_key_link", "duplicate_key_top",
      "duplicate_key_node", "missing_nodes", "missing_node_gpus", "missing_intra_bandwidth",
      "missing_network", "missing_link_latency", "bandwidth_without_unit", "time_without_unit",
      "unknown_bandwidth_unit", "negative_bandwidth", "zero_bandwidth", "efficiency_zero",
      "efficiency_above_one", "bad_enum_fabric", "bad_enum_shape", "gpus_not_integer",
      "nodes_not_integer", "nodes_absurd", "gpus_absurd", "total_gpus_absurd",
      "disconnected_islands", "gpu_does_not_forward", "unknown_device_in_link",
      "duplicate_device", "range_backwards", "range_unclosed", "range_mismatched",
      "forms_mixed", "leaf_spine_without_hosts_per_leaf", "fat_tree_radix_odd",
      "fat_tree_radix_too_small", "sockets_without_socket_link", "nics_without_pcie",
      "oversubscription_below_one"};
  for (const auto& name : required) {
    INFO(name);
    CHECK(fs::exists(kBadDir / (name + ".yaml")));
  }
}

TEST_CASE("duplicate keys are rejected at the second occurrence") {
  SUBCASE("top level") {
    check_error("nodes: 2\nnodes: 4\n" + kNode + kNetwork, 2, 1,
                "duplicate key 'nodes' (first given at line 1)");
  }
  SUBCASE("in a nested block mapping") {
    check_error("nodes: 2\n" + replace(kNode, "  nics: 8\n", "  nics: 8\n  gpus: 4\n") + kNetwork,
                6, 3, "duplicate key 'gpus' (first given at line 3)");
  }
  SUBCASE("in a flow mapping") {
    check_error(replace(kExplicit, "kind: gpu}", "kind: gpu, kind: nic}"), 2, 35,
                "duplicate key 'kind'");
  }
  SUBCASE("quoted and plain spellings of one key") {
    check_error("\"nodes\": 2\nnodes: 4\n" + kNode + kNetwork, 2, 1, "duplicate key 'nodes'");
  }
  SUBCASE("in a mapping inside a list inside a mapping") {
    check_error(replace(kExplicit, "latency: 1us}", "latency: 1us,\n     fabric: roce}"), 6, 6,
                "duplicate key 'fabric' (first given at line 5)");
  }
}

TEST_CASE("equal keys in different mappings, and equal values, are not duplicates") {
  // Every device has name: and kind:; the network and intra both have fabric: and latency:.
  CHECK_NOTHROW((void)load_topology_text(kTemplate, "inline.yaml"));
  CHECK_NOTHROW((void)load_topology_text(
      "name: sw0\n" + replace(kExplicit, "kind: gpu}", "kind: gpu, node: 0}"), "inline.yaml"));
}

TEST_CASE("unknown keys name the closest valid key") {
  SUBCASE("top level") {
    check_error(replace(kTemplate, "nodes: 2", "ndoes: 2"), 1, 1,
                "unknown key 'ndoes' at top level; did you mean 'nodes'?");
  }
  SUBCASE("a key already present is not suggested again") {
    // "nodse" is one deletion from "node", but node: is already there.
    check_error(replace(kTemplate, "nodes: 2", "nodse: 2"), 1, 1, "did you mean 'nodes'?");
  }
  SUBCASE("two swapped letters are one typo") {
    // Plain Levenshtein puts "nodse" nearer to "node" (one deletion) than to "nodes" (two).
    check_error("nodse: 2\n" + kNetwork, 1, 1, "did you mean 'nodes'?");
  }
  SUBCASE("node") {
    check_error(replace(kTemplate, "nic_bandwidth", "nic_bandwidht"), 6, 3,
                "unknown key 'nic_bandwidht' in node; did you mean 'nic_bandwidth'?");
  }
  SUBCASE("node.intra") {
    check_error(replace(kTemplate, "latency: 1us}", "latnecy: 1us}"), 4, 47,
                "in node.intra; did you mean 'latency'?");
  }
  SUBCASE("network") {
    check_error(replace(kTemplate, "  shape:", "  shpae:"), 10, 3,
                "unknown key 'shpae' in network; did you mean 'shape'?");
  }
  SUBCASE("a device") {
    check_error(replace(kExplicit, "kind: gpu", "kidn: gpu"), 2, 24,
                "unknown key 'kidn' in device; did you mean 'kind'?");
  }
  SUBCASE("a link") {
    check_error(replace(kExplicit, "between:", "betwen:"), 5, 6,
                "unknown key 'betwen' in link; did you mean 'between'?");
  }
  SUBCASE("nothing close: the valid keys are listed") {
    check_error(replace(kTemplate, "nodes: 2", "nodes: 2\ncolour: blue"), 2, 1,
                "unknown key 'colour' at top level (valid keys: name, software, gpu, nodes, node, "
                "network, cost or nccl)");
  }
  SUBCASE("a bad enum value lists the accepted spellings and suggests one") {
    check_error(replace(kTemplate, "fabric: infiniband", "fabric: ethrenet"), 9, 11,
                "'ethrenet' is not one of infiniband, roce, ethernet or efa (did you mean 'ethernet'?)");
  }
  SUBCASE("an unknown device in a link suggests a declared one") {
    check_error(replace(kExplicit, "sw0]", "sw]"), 5, 28,
                "unknown device 'sw'; did you mean 'sw0'?");
  }
}

TEST_CASE("errors carry the display name given to load_topology_text") {
  const auto e = error_of("nodes: x\n", "from-a-scenario.yaml");
  REQUIRE(e.has_value());
  CHECK(e->where().file == "from-a-scenario.yaml");
  CHECK(std::string(e->what()).rfind("from-a-scenario.yaml:1:8: error: ", 0) == 0);
}

TEST_CASE("YAML syntax errors point at the cause, never past the end of the file") {
  SUBCASE("an unclosed flow mapping points at its brace") {
    check_error("nodes: 1\nnode: {gpus: 8,\n  intra: {fabric: nvlink}\n", 2, 7,
                "this '{' is never closed");
  }
  SUBCASE("an unclosed list points at its bracket") {
    check_error("devices: [a,\n  b\n", 1, 10, "this '[' is never closed");
  }
  SUBCASE("a tab in the indentation is named") {
    check_error("nodes: 1\nnode:\n  gpus: 1\n\tintra: x\n", 4, 1, "tab in the indentation");
  }
  SUBCASE("a second document is refused") {
    check_error(kTemplate + "---\nnodes: 1\n", 13, 1, "a second YAML document");
  }
  SUBCASE("a syntax error in a second document is not ignored") {
    check_error(kTemplate + "---\n]\n", 14, 1, "invalid YAML: illegal flow end");
  }
  SUBCASE("a document starting with ',' is an error, not an endless loop") {
    check_error("# a comment wrapped by an editor\n, and its tail\nnodes: 1\n", 2, 1,
                "invalid YAML: unexpected ','");
  }
  SUBCASE("a trailing document end or empty document is fine") {
    CHECK_NOTHROW((void)load_topology_text(kTemplate + "...\n", "inline.yaml"));
    CHECK_NOTHROW((void)load_topology_text(kTemplate + "---\n", "inline.yaml"));
  }
  SUBCASE("a leading document marker is fine") {
    CHECK_NOTHROW((void)load_topology_text("---\n" + kTemplate, "inline.yaml"));
  }
  SUBCASE("deep nesting is refused, not a crash") {
    const auto e = error_of("name: " + std::string(100000, '[') + "\n");
    REQUIRE(e.has_value());
    CHECK(e->where().line == 1);
    CHECK(e->reason().find("nested too deeply") != std::string::npos);
  }
}

TEST_CASE("a key written without a value is reported at the key") {
  check_error(replace(kTemplate, "  gpus: 8\n", "  gpus:\n"), 3, 3, "node.gpus has no value");
}

TEST_CASE("absurd sizes are refused before anything is built") {
  SUBCASE("a bracket of many large ranges") {
    std::string ranges = "0-999999";
    for (int i = 0; i < 2000; ++i) ranges += ",0-999999";
    check_error("devices:\n  - {name: \"g[" + ranges + "]\", kind: gpu}\nlinks: []\n", 2, 12,
                "expands to more than 1000000 names");
  }
}
