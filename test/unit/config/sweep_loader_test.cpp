// Sweep files (examples/sweeps/README.md): point order, ids, shards, and every mistake reported at
// file:line:col. Config layer only: no simulation runs here.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "gradsync/sweep/sweep.hpp"

namespace {

using gradsync::ConfigError;
using gradsync::SweepSpec;

// A sweep "file" beside the shipped examples, so `base:` resolves as in examples/sweeps/.
const std::string kName = std::string(GRADSYNC_SOURCE_DIR) + "/examples/sweeps/test.yaml";
const std::string kBase = "base: ../../scenarios/resnet50-pcie-2node-10gbe.yaml\n";

SweepSpec load(const std::string& text) { return gradsync::load_sweep_text(text, kName); }

// The message of the ConfigError that loading `text` throws ("" when none).
std::string error_of(const std::string& text) {
  try {
    (void)load(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string at(int line, int col) { return kName + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: "; }

}  // namespace

TEST_CASE("grid points: the last key varies fastest, values as written") {
  const SweepSpec s = load(kBase + "grid:\n  topology_overrides.nodes: [1, 2]\n"
                                   "  sync.algorithm: [ring, tree, hierarchical]\n");
  REQUIRE(s.point_count() == 6);
  CHECK(s.keys() == std::vector<std::string>{"topology_overrides.nodes", "sync.algorithm"});
  const auto points = s.points();
  CHECK(points[0].sets[0].value == "1");
  CHECK(points[0].sets[1].value == "ring");
  CHECK(points[1].sets[1].value == "tree");
  CHECK(points[3].sets[0].value == "2");
  CHECK(points[3].sets[1].value == "ring");
  CHECK(points[5].sets[1].to_arg() == "sync.algorithm=hierarchical");
  CHECK(s.name == "test");
  CHECK(s.base.filename() == "resnet50-pcie-2node-10gbe.yaml");
}

TEST_CASE("zip rows are walked together, outermost, zip x grid") {
  const SweepSpec s = load(kBase + "name: z\nzip:\n  model.params: [1e9, 2e9, 3e9]\n"
                                   "  sync.bucket: [10MiB, 20MiB, 30MiB]\n"
                                   "grid:\n  sync.algorithm: [ring, tree]\n");
  REQUIRE(s.point_count() == 6);
  CHECK(s.keys() == std::vector<std::string>{"model.params", "sync.bucket", "sync.algorithm"});
  const auto p = s.points();
  CHECK(p[0].sets[0].value == "1e9");
  CHECK(p[0].sets[1].value == "10MiB");
  CHECK(p[1].sets[0].value == "1e9");
  CHECK(p[1].sets[2].value == "tree");
  CHECK(p[4].sets[0].value == "3e9");
  CHECK(p[4].sets[1].value == "30MiB");
  CHECK(s.name == "z");
}

TEST_CASE("point ids: index and a hash of the sets, stable and order-independent") {
  using gradsync::SweepSet;
  const std::string a = gradsync::sweep_point_id(42, {{"x", "1"}, {"y", "ring"}});
  CHECK(a.size() == std::string("p00042-1a2b3c4d").size());
  CHECK(a.starts_with("p00042-"));
  CHECK(a == gradsync::sweep_point_id(42, {{"y", "ring"}, {"x", "1"}}));
  CHECK(a != gradsync::sweep_point_id(42, {{"x", "2"}, {"y", "ring"}}));
  CHECK(a.substr(7) == gradsync::sweep_point_id(7, {{"x", "1"}, {"y", "ring"}}).substr(7));
  // Every point of a sweep has its own id.
  const SweepSpec s = load(kBase + "grid:\n  topology_overrides.nodes: [1, 2, 4, 8]\n"
                                   "  sync.algorithm: [ring, tree, hierarchical]\n");
  std::set<std::string> ids;
  for (const auto& p : s.points()) ids.insert(p.id);
  CHECK(ids.size() == 12);
}

TEST_CASE("shards are 0-based and split the points exactly") {
  const auto shard = gradsync::parse_sweep_shard("2/3");
  CHECK(shard.index == 2);
  CHECK(shard.count == 3);
  std::vector<int> owners(10, 0);
  for (std::uint32_t i = 0; i < 3; ++i)
    for (std::size_t p = 0; p < owners.size(); ++p)
      if (gradsync::parse_sweep_shard(std::to_string(i) + "/3").contains(p)) ++owners[p];
  for (int o : owners) CHECK(o == 1);
  auto message = [](const std::string& text) -> std::string {
    try {
      (void)gradsync::parse_sweep_shard(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(message("3/3").find("--shard 3/3: error: shard 3 of 3 does not exist: shards count from 0") == 0);
  CHECK(message("1/0").find("at least 1") != std::string::npos);
  CHECK(message("x").find("expected I/N") != std::string::npos);
  CHECK(message("1/2/3").find("expected I/N") != std::string::npos);
}

TEST_CASE("sweep file mistakes are reported at file:line:col") {
  CHECK(error_of(kBase + "grdi:\n  sync.algorithm: [ring]\n").find(at(2, 1) + "unknown key 'grdi' at top level; did you mean 'grid'?") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm: []\n").find(at(3, 19) + "grid.sync.algorithm is an empty list") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm: ring\n").find(at(3, 19) + "grid.sync.algorithm must be a list") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm: [ring, {a: 1}]\n").find(at(3, 26) + "grid.sync.algorithm: every value must be a single value") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm:\n").find(at(3, 3) + "grid.sync.algorithm has no values") == 0);
  CHECK(error_of(kBase + "grid: [1, 2]\n").find(at(2, 7) + "grid must be a mapping") == 0);
  CHECK(error_of(kBase + "grid: {}\n").find(at(2, 7) + "grid is empty") == 0);
  CHECK(error_of(kBase + "name: x\n").find(at(1, 1) + "a sweep needs grid:") == 0);
  CHECK(error_of("grid:\n  sync.algorithm: [ring]\n").find(at(1, 1) + "missing required key 'base'") == 0);
  CHECK(error_of("base: nowhere.yaml\ngrid:\n  sync.algorithm: [ring]\n").find(at(1, 7) + "base: cannot open scenario 'nowhere.yaml'") == 0);
  CHECK(error_of("").find(at(1, 1) + "empty file") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm=ring: [ring]\n").find(at(3, 3) + "grid key 'sync.algorithm=ring' contains '='") == 0);
  CHECK(error_of(kBase + "grid:\n  sync..algorithm: [ring]\n").find(at(3, 3) + "grid key 'sync..algorithm' has an empty part") == 0);
  CHECK(error_of(kBase + "zip:\n  model.params: [1e9, 2e9]\n  sync.bucket: [1MiB]\n").find(at(4, 3) + "zip lists must have equal lengths: 'sync.bucket' has 1 values, 'model.params' has 2") == 0);
  CHECK(error_of(kBase + "zip:\n  sync.bucket: [1MiB]\ngrid:\n  sync.bucket: [2MiB]\n").find(at(5, 3) + "'sync.bucket' is swept twice") == 0);
  CHECK(error_of(kBase + "grid:\n  sync.algorithm: [ring]\n  sync.algorithm: [tree]\n").find(at(4, 3)) == 0);  // duplicate key
}

TEST_CASE("more than 100000 points is an error at grid:") {
  std::string hundred = "[";
  for (int i = 0; i < 100; ++i) hundred += (i ? ", " : "") + std::to_string(i + 1);
  hundred += "]";
  const std::string ok = kBase + "grid:\n  training.steps: " + hundred + "\n  training.accumulation: " + hundred +
                         "\n  sync.bucket: [1MiB, 2MiB, 3MiB, 4MiB, 5MiB, 6MiB, 7MiB, 8MiB, 9MiB, 10MiB]\n";
  CHECK(load(ok).point_count() == 100000);
  const std::string too_many = ok + "  sync.algorithm: [ring, tree]\n";
  CHECK(error_of(too_many).find(at(2, 1) + "the sweep has 200000 points (100 × 100 × 10 × 2); at most 100000") == 0);
  // Far beyond: no overflow, a bounded message.
  std::string huge = kBase + "grid:\n";
  for (int k = 0; k < 12; ++k) huge += "  training.k" + std::to_string(k) + ": " + hundred + "\n";
  CHECK(error_of(huge).find("the sweep has at least 1000000 points") != std::string::npos);
}

TEST_CASE("check_sweep_keys: an unknown key fails at its position, a bad value does not") {
  const SweepSpec typo = load(kBase + "grid:\n  sync.algoritm: [ring, tree]\n");
  try {
    gradsync::check_sweep_keys(typo);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(at(3, 3) + "'sync.algoritm' is not a key of scenario") == 0);
    CHECK(std::string(e.what()).find("did you mean 'algorithm'?") != std::string::npos);
  }
  const SweepSpec topo_typo = load(kBase + "grid:\n  topology_overrides.nodse: [1, 2]\n");
  CHECK_THROWS_AS(gradsync::check_sweep_keys(topo_typo), ConfigError);
  // 'rng' fails its points (recorded), but is no reason to refuse the sweep.
  CHECK_NOTHROW(gradsync::check_sweep_keys(load(kBase + "grid:\n  sync.algorithm: [rng, ring]\n")));
  CHECK_NOTHROW(gradsync::check_sweep_keys(load(kBase + "grid:\n  topology_overrides.nodes: [1, 2]\n")));
}
