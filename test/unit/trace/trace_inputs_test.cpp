// import-trace's inputs besides the trace (include/gradsync/trace/trace_inputs.hpp): the file of a
// rank in a folder of per-rank traces, a model's tensors in DDP's backward order, and the
// topology as the written scenario names it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/trace/trace_inputs.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

struct TempFolder {
  fs::path root;
  TempFolder() {
    root = fresh_folder("inputs");
    fs::create_directories(root / "traces");
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void touch(const std::string& name) const { std::ofstream(root / name) << "[]"; }
};

}  // namespace

TEST_CASE("rank_trace_file: a file is itself, a folder gives the file named for the rank") {
  TempFolder t;
  t.touch("traces/rank-0.json");
  t.touch("traces/rank_1.pt.trace.json.gz");
  t.touch("traces/worker12.json");
  t.touch("one.json");
  CHECK(rank_trace_file((t.root / "one.json").string(), 3) == t.root / "one.json");
  const std::string dir = (t.root / "traces").string();
  CHECK(rank_trace_file(dir, std::nullopt) == t.root / "traces" / "rank-0.json");
  CHECK(rank_trace_file(dir, 1) == t.root / "traces" / "rank_1.pt.trace.json.gz");
  CHECK(rank_trace_file(dir, 12) == t.root / "traces" / "worker12.json");
  CHECK_THROWS_WITH_AS(rank_trace_file(dir, 2),
                       doctest::Contains("no file in it is named for rank 2 (e.g. rank-2.json)"),
                       ConfigError);
}

TEST_CASE("backward_tensors: layers in reverse, each layer's tensors in reverse") {
  std::vector<LayerSpec> layers(4);
  layers[0].params = 10;                 // one tensor of its params
  layers[1].params = 0;                  // parameter-free: skipped
  layers[2].params = 6;
  layers[2].tensors = {4, 0, 2};         // an empty tensor is skipped
  layers[3].params = 3;
  layers[3].tensors = {1, 2};
  CHECK(backward_tensors(layers) == std::vector<double>{2, 1, 2, 4, 10});
  CHECK(backward_tensors({}).empty());
}

TEST_CASE("scenario_topology_path: relative to the scenario's folder, absolute kept") {
  TempFolder t;
  t.touch("cluster.yaml");
  const fs::path scenario = t.root / "traces" / "s.yaml";
  const std::string abs = (t.root / "cluster.yaml").string();
  CHECK(scenario_topology_path(abs, scenario) == abs);
  const fs::path cwd = fs::current_path();
  fs::current_path(t.root);
  CHECK(scenario_topology_path("cluster.yaml", scenario) == "../cluster.yaml");
  CHECK_THROWS_WITH_AS(scenario_topology_path("missing.yaml", scenario),
                       "gradsync import-trace --topology: error: cannot open 'missing.yaml'",
                       ConfigError);
  fs::current_path(cwd);
}
