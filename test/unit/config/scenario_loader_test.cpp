// Scenario files (README.md): every shipped scenario loads into the model it describes;
// --set and topology_overrides edit the YAML before it is read; and every mistake — in the
// file, in a --set, in a topology override — is a ConfigError placed where it was written.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/step_schedule.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gradsync;

const fs::path kSourceTop(GRADSYNC_SOURCE_DIR);
const fs::path kScenarios = kSourceTop / "scenarios";
// Inline test scenarios "live" in scenarios/, so ../topologies/ resolves as in shipped files.
const std::string kInline = (kScenarios / "inline-test.yaml").string();

std::vector<fs::path> shipped_scenarios() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kScenarios))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

LoadedScenario load_shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(kScenarios / (name + ".yaml"), sets);
}

std::optional<ConfigError> error_in(const std::string& text,
                                    const std::vector<std::string>& sets = {}) {
  try {
    (void)load_scenario_text(text, kInline, sets);
  } catch (const ConfigError& e) {
    return e;
  }
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A small valid scenario; tests append or substitute lines.
const std::string kBase = R"(name: base
topology: ../topologies/pcie-4gpu.yaml
model:
  params: 25e6
  grad_dtype: fp32
  layers: 10
compute:
  forward: 30ms
  backward: 60ms
  samples_per_micro_batch: 32
)";

std::string fmt_position(const SourceMark& m) {
  return m.file + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + ": error: ";
}

// Checks an error sits at line:col of the inline scenario with `part` in its reason.
void check_error_at(const std::optional<ConfigError>& e, int line, int column,
                    const std::string& part) {
  REQUIRE_MESSAGE(e.has_value(), "expected an error mentioning: " << part);
  INFO(std::string(e->what()));
  CHECK(e->where().file == kInline);
  CHECK(e->where().line == line);
  CHECK(e->where().column == column);
  CHECK(contains(e->reason(), part));
  CHECK(contains(std::string(e->what()), fmt_position(e->where())));
}

}  // namespace

TEST_CASE("every shipped scenario loads, with its topology, and plans buckets") {
  const auto files = shipped_scenarios();
  REQUIRE(files.size() >= 7);
  for (const auto& file : files) {
    INFO(file.string());
    const LoadedScenario l = load_scenario_file(file);
    const Scenario& s = l.scenario;
    CHECK_FALSE(s.name.empty());
    CHECK(l.topology.topology.gpu_count() > 0);
    CHECK_FALSE(s.topology.inline_mapping);
    CHECK(fs::exists(s.topology.path));
    CHECK(s.model.total_params() > 0.0);
    CHECK(s.compute.forward.seconds() > 0.0);
    CHECK(s.compute.backward.seconds() > 0.0);
    const auto buckets = build_buckets(s.model, s.sync);
    CHECK_FALSE(buckets.empty());
    const auto ranks = data_parallel_ranks(
        s.gpus.value_or(static_cast<std::uint32_t>(l.topology.topology.gpu_count())), s.sync);
    CHECK(ranks > 0);
    const SyncPlan plan = plan_sync(buckets, s.model, s.sync, ranks);
    CHECK(plan.grad_bytes.bytes() == doctest::Approx(s.model.grad_bytes().bytes()));
  }
}

TEST_CASE("shipped scenarios hold the numbers their comments cite") {
  const LoadedScenario llama = load_shipped("llama-7b-4node-ib");
  CHECK(llama.scenario.model.total_params() == 6'738'415'616.0);  // the HF checkpoint's
  CHECK(llama.scenario.model.layers.size() == 34);  // embedding, 32 blocks, head
  CHECK(llama.scenario.model.grad_bytes().bytes() == 2.0 * 6'738'415'616.0);  // bf16
  CHECK(llama.topology.topology.gpu_count() == 32);
  CHECK(llama.scenario.training.accumulation == 4);

  const LoadedScenario resnet = load_shipped("resnet50-pcie-4gpu");
  CHECK(resnet.scenario.model.total_params() == 25'557'032);  // torchvision resnet50
  CHECK(resnet.scenario.model.layers.size() == 18);           // stem, 16 blocks, fc
  CHECK(resnet.scenario.compute.forward.seconds() == doctest::Approx(34.4e-3));
  const LoadedScenario resnet2 = load_shipped("resnet50-pcie-2node-10gbe");
  CHECK(resnet2.scenario.model.total_params() == 25'557'032);
  CHECK(resnet2.topology.topology.gpu_count() == 8);

  const LoadedScenario clip = load_shipped("clip-vit-l14-dgx-a100");
  CHECK(clip.scenario.model.total_params() == 427'616'513);  // OpenCLIP ViT-L-14: 427.62M
  double image = 0.0;
  for (const auto& l : clip.scenario.model.layers)
    if (l.group == "image") image += l.params;
  CHECK(image == 303'966'208);  // OpenCLIP: image 303.97M
  // Backward starts with the text tower: the first bucket holds the text head.
  const auto buckets = build_buckets(clip.scenario.model, clip.scenario.sync);
  CHECK(clip.scenario.model.layers[buckets.front().layers.front()].name == "text.head");

  const LoadedScenario ps = load_shipped("bert-large-ps-25gbe");
  CHECK(ps.scenario.sync.strategy == SyncStrategy::ParameterServer);
  CHECK(ps.scenario.sync.ps.servers == 8);
  CHECK(ps.scenario.sync.ps.placement == PsPlacement::Colocated);
  const LoadedScenario ar = load_shipped("bert-large-allreduce-25gbe");
  CHECK(ar.scenario.model.total_params() == doctest::Approx(335e6));
  CHECK(ar.scenario.model.layers.back().params == 2048);  // tied head: the final norm only
}

TEST_CASE("scenarios/default.yaml is the 7B scenario with ZeRO-1") {
  const Scenario d = load_shipped("default").scenario;
  const Scenario l = load_shipped("llama-7b-4node-ib").scenario;
  CHECK(d.name == "default");
  CHECK(d.topology.path == l.topology.path);
  REQUIRE(d.model.layers.size() == l.model.layers.size());
  for (std::size_t i = 0; i < d.model.layers.size(); ++i) {
    CHECK(d.model.layers[i].params == l.model.layers[i].params);
    CHECK(d.model.layers[i].backward == l.model.layers[i].backward);
  }
  CHECK(d.model.grad_dtype == l.model.grad_dtype);
  CHECK(d.compute.forward == l.compute.forward);
  CHECK(d.compute.optimizer == l.compute.optimizer);
  CHECK(d.compute.samples_per_micro_batch == l.compute.samples_per_micro_batch);
  CHECK(d.training.accumulation == l.training.accumulation);
  CHECK(d.training.steps == l.training.steps);
  CHECK(d.sync.bucket == l.sync.bucket);
  CHECK(d.sync.overlap == l.sync.overlap);
  CHECK(d.sync.algorithm == l.sync.algorithm);
  // ... with ZeRO-1 instead of plain DDP replicas.
  CHECK(l.parallel.plain());
  CHECK(d.parallel.data == DataParallelism::Zero1);
  CHECK(d.parallel.tensor == 1);
  CHECK(d.parallel.pipeline == 1);
}

TEST_CASE("--set edits the scenario and the topology before they are read") {
  const LoadedScenario l = load_shipped(
      "llama-7b-4node-ib", {"sync.bucket=50MiB", "topology_overrides.nodes=2",
                            "training.accumulation=8", "sync.compression.method=int8"});
  CHECK(l.scenario.sync.bucket.bytes() == 50.0 * 1048576.0);
  CHECK(l.topology.topology.gpu_count() == 16);
  CHECK(l.scenario.topology_overrides == std::vector<std::string>{"nodes=2"});
  CHECK(l.scenario.training.accumulation == 8);
  CHECK(l.scenario.sync.compression.method == CompressionMethod::Int8);
  CHECK(l.scenario.sets.size() == 4);

  // A key the file does not write is added: the topology's network.efficiency, a flow
  // mapping for compression, a whole training block.
  const LoadedScenario added =
      load_shipped("llama-7b-4node-ib",
                   {"topology_overrides.network.efficiency=0.5", "sync.compression.ratio=0.01",
                    "sync.compression.method=topk", "gpus=8"});
  bool halved = false;
  for (const Link& link : added.topology.topology.links())
    halved = halved || (link.fabric == Fabric::InfiniBand && link.efficiency == 0.5);
  CHECK(halved);
  CHECK(added.scenario.sync.compression.ratio == 0.01);
  CHECK(added.scenario.gpus == 8u);

  const LoadedScenario base = load_scenario_text(kBase, kInline, {"training.steps=7"});
  CHECK(base.scenario.training.steps == 7);
  CHECK(base.scenario.model.layers.size() == 10);
  // --set a flow mapping, and the last of two --set on one key wins.
  const LoadedScenario flow = load_scenario_text(
      kBase, kInline, {"sync={overlap: none, bucket: 4MiB}", "model.layers=4", "model.layers=5"});
  CHECK(flow.scenario.sync.overlap == Overlap::None);
  CHECK(flow.scenario.sync.bucket.bytes() == 4.0 * 1048576.0);
  CHECK(flow.scenario.model.layers.size() == 5);
  // A flow mapping in the file is replaced whole (quotes, braces in comments and all).
  const LoadedScenario whole = load_scenario_text(
      kBase + "sync: {overlap: 'none', bucket: \"4MiB\", algorithm: ring}  # not a } brace\n",
      kInline, {"sync={overlap: layerwise}", "training.steps=2"});
  CHECK(whole.scenario.sync.overlap == Overlap::Layerwise);
  CHECK(whole.scenario.sync.bucket == kDdpBucketBytes);
  CHECK(whole.scenario.sync.algorithm == SyncAlgorithm::Auto);
  CHECK(load_shipped("llama-7b-4node-ib", {"sync.compression={method: int8}"})
            .scenario.sync.compression.method == CompressionMethod::Int8);
}

TEST_CASE("topology_overrides in the scenario: dotted or nested keys, --set wins") {
  const std::string text = kBase +
                           "topology: ../topologies/pcie-4gpu-2node-10gbe.yaml\n"
                           "topology_overrides:\n"
                           "  nodes: 3\n"
                           "  network.shape: single-switch\n"
                           "  node: {nics: 2}\n";
  // (kBase's topology: line is replaced below: two topology keys would be a duplicate.)
  std::string scenario = text;
  scenario.erase(scenario.find("topology: ../topologies/pcie-4gpu.yaml\n"),
                 std::string("topology: ../topologies/pcie-4gpu.yaml\n").size());
  const LoadedScenario l = load_scenario_text(scenario, kInline);
  CHECK(l.topology.topology.gpu_count() == 12);
  CHECK(l.topology.cluster->node.nics == 2);
  CHECK(l.scenario.topology_overrides ==
        std::vector<std::string>{"nodes=3", "network.shape=single-switch", "node.nics=2"});
  const LoadedScenario set = load_scenario_text(scenario, kInline, {"topology_overrides.nodes=4"});
  CHECK(set.topology.topology.gpu_count() == 16);
}

TEST_CASE("an inline topology mapping loads, and its errors point into the scenario") {
  const std::string text = R"(name: inline
topology:
  nodes: 1
  node:
    gpus: 4
    intra: {fabric: nvlink, bandwidth: 450GB/s, latency: 1us}
model: {params: 1e9, grad_dtype: bf16}
compute: {forward: 10ms, backward: 20ms, samples_per_micro_batch: 4}
)";
  const LoadedScenario l = load_scenario_text(text, kInline);
  CHECK(l.scenario.topology.inline_mapping);
  CHECK(l.topology.topology.gpu_count() == 4);
  CHECK(load_scenario_text(text, kInline, {"topology.node.gpus=8"}).topology.topology.gpu_count() ==
        8);
  CHECK(load_scenario_text(text, kInline, {"topology_overrides.node.gpus=2"})
            .topology.topology.gpu_count() == 2);

  std::string bad = text;
  bad.replace(bad.find("450GB/s"), 7, "450");
  check_error_at(error_in(bad), 6, 40, "no unit");
  const auto over = error_in(text, {"topology_overrides.node.gpus=0"});
  REQUIRE(over.has_value());
  CHECK(over->where().file == "--set topology_overrides.node.gpus=0");
  CHECK(contains(over->reason(), "node.gpus"));
}

TEST_CASE("errors in the scenario file: file:line:col, suggestions, accepted spellings") {
  // Unknown key, with the closest valid one.
  check_error_at(error_in(kBase + "sync:\n  bukcet: 25MiB\n"), 12, 3,
                 "unknown key 'bukcet' in sync; did you mean 'bucket'?");
  check_error_at(error_in(kBase + "trainig: {steps: 2}\n"), 11, 1, "did you mean 'training'?");
  // A size without a unit.
  check_error_at(error_in(kBase + "sync: {bucket: 50}\n"), 11, 16, "no unit");
  // A time without a unit.
  std::string no_time_unit = kBase;
  no_time_unit.replace(no_time_unit.find("30ms"), 4, "30");
  check_error_at(error_in(no_time_unit), 8, 12, "no unit");
  // Bad enum values list what is accepted.
  check_error_at(error_in(kBase + "sync: {overlap: sometimes}\n"), 11, 17,
                 "'sometimes' is not one of none, bucketed or layerwise");
  check_error_at(error_in(kBase + "sync: {strategy: allreduse}\n"), 11, 18,
                 "(did you mean 'allreduce'?)");
  std::string dtype = kBase;
  dtype.replace(dtype.find("fp32"), 4, "fp64");
  check_error_at(error_in(dtype), 5, 15, "fp32, fp16, bf16 or fp8");
  // Ranges.
  check_error_at(error_in(kBase + "training: {steps: 0}\n"), 11, 19, "between 1 and 10000");
  check_error_at(error_in(kBase + "training: {accumulation: 0}\n"), 11, 26, "between 1 and");
  check_error_at(error_in(kBase + "sync: {bucket: 512B}\n"), 11, 16, "between 1 KiB and 1 TiB");
  check_error_at(error_in(kBase + "sync: {ps: {servers: 0}}\n"), 11, 22, "between 1 and 256");
  check_error_at(error_in(kBase + "sync: {compression: {method: topk, ratio: 1.5}}\n"), 11, 43,
                 "(0, 1]");
  check_error_at(error_in(kBase + "sync: {compression: {method: topk}}\n"), 11, 21,
                 "missing required key 'ratio'");
  check_error_at(error_in(kBase + "sync: {compression: {method: none, encode_rate: 50GB/s}}\n"), 11,
                 49, "applies when a compression method is set");
  check_error_at(error_in(kBase + "gpus: 5\n"), 11, 7, "has 4 GPUs");
  // NVLS needs one NVSwitch domain of NVLink4 or later: not PCIe GPUs.
  check_error_at(error_in(kBase + "sync: {algorithm: nvls}\n"), 11, 19,
                 "nvls cannot run on these GPUs");
  // NVLSTree needs two servers or more, each with its own NVSwitch: one PCIe server has none.
  check_error_at(error_in(kBase + "sync: {algorithm: nvlstree}\n"), 11, 19,
                 "nvlstree cannot run on these GPUs");
  std::string one_h100 = kBase + "sync: {algorithm: nvlstree}\n";
  one_h100.replace(one_h100.find("pcie-4gpu.yaml"), 14, "dgx-h100.yaml");
  check_error_at(error_in(one_h100), 11, 19, "one server: use nvls");
  // CollNetChain needs two servers or more whose NICs share SHARP switches.
  check_error_at(error_in(kBase + "sync: {algorithm: collnetchain}\n"), 11, 19,
                 "collnetchain cannot run on these GPUs: CollNet needs whole servers, two or more");
  std::string no_sharp = kBase + "sync: {algorithm: collnetchain}\n";
  no_sharp.replace(no_sharp.find("pcie-4gpu.yaml"), 14, "dgx-h100-4node-ib.yaml");
  check_error_at(error_in(no_sharp), 11, 19, "CollNet needs SHARP");
  std::string direct = kBase + "sync: {algorithm: collnetdirect}\n";
  direct.replace(direct.find("pcie-4gpu.yaml"), 14, "pcie-4gpu-2node-10gbe.yaml");
  check_error_at(error_in(direct), 11, 19, "collnetdirect cannot run on these GPUs: CollNetDirect needs NVSwitch servers");
  // Absurd times are unit typos: at most an hour per micro-batch.
  std::string slow = kBase;
  slow.replace(slow.find("30ms"), 4, "30000s");
  check_error_at(error_in(slow), 8, 12, "8.333 h per micro-batch is too long (at most 1h)");
  std::string flops = kBase;
  flops.replace(flops.find("  params: 25e6\n"), 15, "");
  flops.replace(flops.find("  layers: 10\n"), 13, "  layers: [{params: 25e6, flops: 1e300}]\n");
  check_error_at(error_in(flops), 5, 34, "at most 1e24");
  std::string params = kBase;
  params.replace(params.find("25e6"), 4, "1e14");
  check_error_at(error_in(params), 4, 11, "below 1e13");
  std::string topo = kBase;
  topo.replace(topo.find("pcie-4gpu.yaml"), 14, "pcie-4gpu-typo.yaml");
  check_error_at(error_in(topo), 2, 11, "cannot open '../topologies/pcie-4gpu-typo.yaml'");
}

TEST_CASE("errors in models: presets and explicit layer lists") {
  const std::string head = "name: m\ntopology: ../topologies/pcie-4gpu.yaml\n";
  const std::string compute =
      "compute: {forward: 10ms, backward: 20ms, samples_per_micro_batch: 1}\n";
  // A transformer preset whose params is far from its formula.
  check_error_at(error_in(head +
                          "model: {params: 7e9, grad_dtype: bf16, layers: 32, hidden: 8192, "
                          "vocab: 32000}\n" +
                          compute),
                 3, 17, "more than 25 %");
  check_error_at(error_in(head + "model: {grad_dtype: bf16, layers: 32, hidden: 4096}\n" + compute),
                 3, 8, "missing required key 'vocab'");
  check_error_at(
      error_in(head + "model: {params: 1e9, grad_dtype: bf16, seq_len: 128}\n" + compute), 3, 49,
      "applies to the transformer preset");
  // Explicit lists: times for all layers or none; never both layer times and compute totals.
  const std::string mixed = head +
                            "model:\n"
                            "  grad_dtype: fp16\n"
                            "  layers:\n"
                            "    - {name: a, params: 1e6, forward: 1ms, backward: 2ms}\n"
                            "    - {name: b, params: 1e6}\n" +
                            "compute: {samples_per_micro_batch: 1}\n";
  check_error_at(error_in(mixed), 7, 7, "model.layers.1: has no forward/backward");
  const std::string both = head +
                           "model:\n"
                           "  grad_dtype: fp16\n"
                           "  layers:\n"
                           "    - {name: a, params: 1e6, forward: 1ms, backward: 2ms}\n" +
                           compute;
  check_error_at(error_in(both), 7, 20, "give their own times");
  const std::string half = head +
                           "model:\n"
                           "  grad_dtype: fp16\n"
                           "  layers: [{name: a, params: 1e6, forward: 1ms}]\n" +
                           compute;
  check_error_at(error_in(half), 5, 44, "forward and backward are given together");
  const std::string repeat =
      head +
      "model:\n"
      "  grad_dtype: fp16\n"
      "  layers: [{name: a, params: 1e6, repeat: 3}, {name: b, params: 0}]\n" +
      compute;
  const LoadedScenario r = load_scenario_text(repeat, kInline);
  REQUIRE(r.scenario.model.layers.size() == 4);
  CHECK(r.scenario.model.layers[2].name == "a.2");
  CHECK(r.scenario.model.layers[0].forward.seconds() == doctest::Approx(10e-3 / 3));  // ∝ params
  CHECK(r.scenario.model.layers[3].forward.seconds() == 0.0);
}

TEST_CASE("errors in --set: named after the --set, not a file position") {
  auto e = error_in(kBase, {"sync.bukcet=1MiB"});
  REQUIRE(e.has_value());
  CHECK(e->where().file == "--set sync.bukcet=1MiB");
  CHECK(e->where().line == 0);
  CHECK(std::string(e->what()) ==
        "--set sync.bukcet=1MiB: error: unknown key 'bukcet' in sync; did you mean 'bucket'?");

  e = error_in(kBase, {"modle.params=1e9"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "did you mean 'model'?"));

  e = error_in(kBase, {"sync.bucket=5B"});
  REQUIRE(e.has_value());
  CHECK(std::string(e->what()) ==
        "--set sync.bucket=5B: error: sync.bucket: must be between 1 KiB and 1 TiB, got 5 B");

  e = error_in(kBase, {"model.params=25e6GB"});
  REQUIRE(e.has_value());
  CHECK(e->where().file == "--set model.params=25e6GB");
  CHECK(contains(e->reason(), "unknown suffix \"GB\""));
  // Counts take K, M, B, T as `estimate --params` does.
  CHECK(load_scenario_text(kBase, kInline, {"model.params=350M"}).scenario.model.total_params() ==
        doctest::Approx(350e6));

  e = error_in(kBase, {"model.params.x=1"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "model.params is a single value"));

  e = error_in(kBase, {"bucket 50MiB"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "expected KEY=VALUE"));

  e = error_in(kBase, {"topology_overrides.nodse=2"});
  REQUIRE(e.has_value());
  CHECK(e->where().file == "--set topology_overrides.nodse=2");
  CHECK(contains(e->reason(), "unknown key 'nodse'"));
  CHECK(contains(e->reason(), "did you mean 'nodes'?"));

  e = error_in(kBase, {"topology_overrides.node.intra.fabric=infiniband"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "'infiniband' is not one of nvlink or pcie"));

  e = error_in(kBase, {"sync.bucket=8MiB", "sync.bucket.cap=8MiB"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "both set sync.bucket"));
}

TEST_CASE("topology override errors: at the override's value in the scenario") {
  check_error_at(error_in(kBase + "topology_overrides: {nodes: 0}\n"), 11, 29, "in topology ");
  const auto e = error_in(kBase + "topology_overrides: {nodes: 0}\n");
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "nodes: must be between 1 and 100000, got 0"));
  // A network block added to a one-server topology still needs its other keys.
  check_error_at(error_in(kBase + "topology_overrides:\n  network.fabric: roce\n"), 12, 19,
                 "missing required key 'shape' in network");
  // An error the override causes elsewhere stays in the topology file, and says so.
  const auto network = error_in(kBase + "topology_overrides: {nodes: 2}\n");
  REQUIRE(network.has_value());
  CHECK(contains(network->where().file, "pcie-4gpu.yaml"));
  CHECK(network->where().line > 0);
  CHECK(contains(network->reason(), "missing required key 'network'"));
  CHECK(contains(network->reason(), "(with overrides nodes=2)"));
}

TEST_CASE("parallel: keys, defaults and errors at file:line:col") {
  const std::string base = R"(name: t
topology: ../topologies/pcie-4gpu.yaml
model: {layers: 6, hidden: 256, vocab: 1000, seq_len: 128, grad_dtype: bf16}
compute: {forward: 30ms, backward: 60ms, samples_per_micro_batch: 1}
training: {accumulation: 3}
)";
  const Scenario ok = load_scenario_text(base + "parallel: {data: hsdp, shard_group: 2}\nmemory: 40GB\n",
                                         kInline).scenario;
  CHECK(ok.parallel.data == DataParallelism::Hsdp);
  CHECK(ok.parallel.shard_group == 2);
  CHECK(ok.parallel.prefetch);
  CHECK(ok.parallel.reshard_after_forward);
  CHECK(ok.memory->bytes() == doctest::Approx(40e9));
  CHECK(ok.model.hidden == 256);
  CHECK(ok.model.seq_len == 128);
  CHECK(load_scenario_text(base, kInline).scenario.parallel.plain());

  check_error_at(error_in(base + "parallel: {data: zero4}\n"), 6, 18, "did you mean 'zero1'?");
  check_error_at(error_in(base + "parallel: {tensor: 3}\n"), 6, 20, "does not divide the 4 GPUs");
  check_error_at(error_in(base + "parallel: {data: zero1, shard_group: 2}\n"), 6, 38,
                 "applies to data: hsdp only");
  check_error_at(error_in(base + "parallel: {data: hsdp, shard_group: 3}\n"), 6, 37,
                 "does not divide the data-parallel degree 4");
  check_error_at(error_in(base + "parallel: {prefetch: false}\n"), 6, 22,
                 "applies to data: zero3, fsdp or hsdp");
  check_error_at(error_in(base + "parallel: {data: zero2, sync_every_micro_batch: false}\n"), 6,
                 49, "zero2 reduce-scatters after every micro-batch");
  check_error_at(error_in(base + "parallel: {schedule: interleaved}\n"), 6, 22,
                 "needs pipeline: 2 or more");
  check_error_at(error_in(base + "parallel: {pipeline: 2, schedule: interleaved, virtual_stages: 2}\n"),
                 6, 35, "a multiple of pipeline (2)");
  check_error_at(error_in(base + "parallel: {virtual_stages: 2}\n"), 6, 28,
                 "applies to schedule: interleaved");
  check_error_at(error_in(base + "parallel: {data: zero1}\nsync: {compression: int8}\n"), 6, 18,
                 "compression is modelled for plain DDP only");
  check_error_at(error_in(base + "parallel: {data: zero1}\nsync: {strategy: ps}\n"), 6, 18,
                 "needs sync.strategy: allreduce");
  check_error_at(error_in(base + "memory: 0GB\n"), 6, 9, "must be positive");
  check_error_at(error_in(base + "memory: 80\n"), 6, 9, "no unit");
  check_error_at(error_in(kBase + "parallel: {tensor: 2}\n"), 11, 20,
                 "needs model.hidden and model.seq_len");
  check_error_at(error_in(base + "parallel: {tensr: 2}\n"), 6, 12, "did you mean 'tensor'?");
  // A what-if that changes the data mode sets aside the file's keys of the old mode, saying so;
  // written in the file, they stay errors.
  const std::string hsdp = base + "parallel: {data: hsdp, shard_group: 2, prefetch: false}\n";
  const Scenario moved = load_scenario_text(hsdp, kInline, {"parallel.data=zero1"}).scenario;
  CHECK(moved.parallel.data == DataParallelism::Zero1);
  CHECK(moved.parallel.shard_group == 0);
  CHECK(moved.parallel.prefetch);
  REQUIRE(moved.notes.size() == 2);
  CHECK(moved.notes[0].find("parallel.shard_group") != std::string::npos);
  CHECK(moved.notes[1].find("--set made data: zero1") != std::string::npos);
  CHECK(!load_scenario_text(hsdp, kInline, {"parallel.data=fsdp"}).scenario.parallel.prefetch);
  CHECK(load_scenario_text(hsdp, kInline).scenario.notes.empty());
  check_error_at(error_in(base + "parallel: {data: zero1, prefetch: false}\n"), 6, 35,
                 "applies to data: zero3, fsdp or hsdp");
  check_error_at(error_in(base + "parallel: {tensor: 2, order: tp-dp-dp}\n"), 6, 30,
                 "not an order of tp, dp and pp");
  CHECK(to_string(load_scenario_text(base + "parallel: {tensor: 2, order: dp-tp-pp}\n", kInline)
                      .scenario.parallel.order) == "dp-tp-pp");
}

TEST_CASE("the shipped 3D and HSDP scenarios hold the layouts their comments describe") {
  const LoadedScenario l = load_shipped("llama-70b-3d-64node-ib");
  CHECK(l.topology.topology.gpu_count() == 512);
  CHECK(l.scenario.parallel.tensor == 8);
  CHECK(l.scenario.parallel.pipeline == 4);
  CHECK(l.scenario.parallel.data == DataParallelism::Zero1);
  CHECK(l.scenario.model.total_params() == 68'976'648'192.0);  // the HF checkpoint's
  CHECK(l.scenario.model.layers.size() == 82);
}

TEST_CASE("sync.overlap: true and false read as bucketed and none; anything else is named") {
  CHECK(load_scenario_text(kBase, kInline, {"sync.overlap=true"}).scenario.sync.overlap ==
        Overlap::Bucketed);
  CHECK(load_scenario_text(kBase, kInline, {"sync.overlap=false"}).scenario.sync.overlap ==
        Overlap::None);
  const auto e = error_in(kBase, {"sync.overlap=yes"});
  REQUIRE(e.has_value());
  CHECK(contains(e->reason(), "not one of none, bucketed or layerwise"));
}

TEST_CASE("model.preset: a published model by name, its keys overridable, errors positioned") {
  const std::string base = R"(name: t
topology: ../topologies/pcie-4gpu.yaml
compute: {forward: 30ms, backward: 60ms, samples_per_micro_batch: 1}
)";
  const Scenario s = load_scenario_text(base + "model: {preset: llama-2-7b}\n", kInline).scenario;
  CHECK(s.model.total_params() == 6'738'415'616.0);
  CHECK(s.model.grad_dtype == GradDtype::Bf16);  // the default with a preset
  CHECK(s.model.hidden == 4096);
  CHECK(s.model.seq_len == 4096);
  CHECK(s.model.layers.size() == 34);  // embedding, 32 blocks, head
  CHECK(s.model.layers[1].tensors.size() == 9);  // q, k, v, o, gate, up, down, 2 norms

  const Scenario shorter =
      load_scenario_text(base + "model: {preset: llama-2-7b, layers: 16, seq_len: 2048}\n", kInline)
          .scenario;
  CHECK(shorter.model.layers.size() == 18);
  CHECK(shorter.model.seq_len == 2048);
  const Scenario rounded =
      load_scenario_text(base + "model: {preset: llama-2-7b, params: 7B, grad_dtype: fp32}\n", kInline)
          .scenario;
  CHECK(rounded.model.total_params() == doctest::Approx(7e9));
  CHECK(rounded.model.grad_dtype == GradDtype::Fp32);

  check_error_at(error_in(base + "model: {preset: llama-2-7}\n"), 4, 17, "did you mean 'llama-2-7b'?");
  check_error_at(error_in(base + "model: {preset: gpt-3-175b, tie_embeddings: false}\n"), 4, 45,
                 "fixed by the preset's architecture");
  check_error_at(error_in(base + "model: {preset: llama-2-7b, params: 20B}\n"), 4, 37,
                 "more than 25 % away");
}

TEST_CASE("compute.mfu / tflops: forward from the model's FLOPs and the GPU's peak") {
  const std::string base = R"(name: t
topology: ../topologies/dgx-h100.yaml
model: {preset: llama-2-7b}
)";
  const Scenario s =
      load_scenario_text(base + "compute: {mfu: 0.5, samples_per_micro_batch: 2}\n", kInline).scenario;
  double flops = 0.0;
  for (const LayerSpec& l : s.model.layers) flops += l.flops;
  // Per sample: 4096 tokens × (2 × 6.476e9 block parameters + 32 × 4·s·h + 2·h·V).
  const double per_token = 2.0 * 32 * 202'383'360 + 32 * 4.0 * 4096 * 4096 + 2.0 * 4096 * 32000;
  CHECK(flops == doctest::Approx(4096 * per_token));
  CHECK(s.compute.forward.seconds() == doctest::Approx(2 * flops / (0.5 * 989.4e12)));
  CHECK(s.compute.backward.seconds() == doctest::Approx(2 * s.compute.forward.seconds()));
  Seconds layers{0.0};
  for (const LayerSpec& l : s.model.layers) layers += l.forward;
  CHECK(layers.seconds() == doctest::Approx(s.compute.forward.seconds()));
  CHECK(s.compute.optimizer.seconds() == doctest::Approx(28.0 * 6'738'415'616.0 / 3.35e12));
  CHECK(s.notes.size() == 2);

  const Scenario t = load_scenario_text(
      base + "compute: {tflops: 400, optimizer: 10ms, samples_per_micro_batch: 1}\n", kInline).scenario;
  CHECK(t.compute.forward.seconds() == doctest::Approx(flops / 400e12));
  CHECK(t.compute.optimizer.seconds() == doctest::Approx(0.01));

  check_error_at(error_in(base + "compute: {mfu: 1.5, samples_per_micro_batch: 1}\n"), 4, 16,
                 "a share of the peak in (0, 1]");
  check_error_at(error_in(base + "compute: {tflops: 1e-9, samples_per_micro_batch: 1}\n"), 4, 19,
                 "more than an hour");
  check_error_at(error_in(base + "compute: {mfu: 0.4, forward: 1s, samples_per_micro_batch: 1}\n"),
                 4, 16, "remove compute.forward or mfu");
  check_error_at(error_in(R"(name: t
topology: ../topologies/dgx-h100.yaml
model: {params: 7B, grad_dtype: bf16}
compute: {mfu: 0.4, samples_per_micro_batch: 1}
)"), 4, 16, "needs the model's FLOPs");
}

TEST_CASE("the resnet-50 preset has fixed layers and no transformer dimensions") {
  const std::string resnet = R"(name: r
topology: ../topologies/pcie-4gpu.yaml
model: {preset: resnet-50, grad_dtype: fp32}
compute: {forward: 30ms, backward: 60ms, samples_per_micro_batch: 32}
)";
  const LoadedScenario l = load_scenario_text(resnet, kInline);
  CHECK(l.scenario.model.total_params() == 25'557'032);
  CHECK(l.scenario.model.layers.size() == 18);
  CHECK(l.scenario.model.hidden == 0.0);  // nothing for tensor or pipeline parallelism to move
  std::string with_layers = resnet;
  with_layers.replace(with_layers.find("grad_dtype"), 10, "layers: 4, grad_dtype");
  check_error_at(error_in(with_layers), 3, 36, "fixed layers");
  check_error_at(error_in(resnet + "parallel: {tensor: 2}\n"), 5, 20, "needs model.hidden");
}

TEST_CASE("sync.buckets and layer tensors: checked against the model and its backward") {
  const std::string base = R"(name: b
topology: ../topologies/pcie-4gpu.yaml
model:
  grad_dtype: fp32
  layers:
    - {name: a, params: 1M, forward: 2ms, backward: 4ms, tensors: [750000, 250000]}
    - {name: b, params: 3M, forward: 3ms, backward: 6ms}
compute: {samples_per_micro_batch: 32}
sync:
  strategy: allreduce
  buckets:
    - {bytes: 12MB, ready_at: 6ms}
    - {bytes: 4MB, ready_at: 10ms}
)";
  const LoadedScenario l = load_scenario_text(base, kInline);
  const auto buckets = build_buckets(l.scenario.model, l.scenario.sync);
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].bytes.bytes() == 12e6);
  CHECK(buckets[1].ready_offset.seconds() == doctest::Approx(0.010));
  CHECK(l.scenario.model.layers[0].tensors == std::vector<double>{750000, 250000});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  check_error_at(error_in(with("12MB", "11MB")), 12, 5, "must agree within 1 %");
  check_error_at(error_in(with("ready_at: 10ms", "ready_at: 11ms")), 13, 30, "after the backward ends");
  check_error_at(error_in(with("ready_at: 6ms", "ready_at: 16ms")), 13, 30, "in the order they become ready");
  check_error_at(error_in(with("250000]", "250001]")), 6, 67, "add up to 1000001 elements");
  check_error_at(error_in(base + "  bucket: 25MiB\n"), 14, 11, "remove sync.bucket");
  check_error_at(error_in(base + "  overlap: layerwise\n"), 14, 12, "cannot be used with sync.buckets");
  // A --set of DDP's rule sets the explicit buckets aside, with a note.
  const LoadedScenario rule = load_scenario_text(base, kInline, {"sync.bucket=512KiB"});
  CHECK(rule.scenario.sync.buckets.empty());
  REQUIRE(rule.scenario.notes.size() == 1);
  CHECK(contains(rule.scenario.notes[0], "sync.buckets"));
  CHECK(build_buckets(rule.scenario.model, rule.scenario.sync).size() == 3);  // 12 MB, 1 MB, 3 MB
}

TEST_CASE("sync.ps.hosts: servers on hosts of their own, cabled beside the servers' NICs") {
  const std::string ps = "sync:\n  strategy: ps\n  ps:\n    hosts: {count: 2, nic_bandwidth: 50Gbps}\n";
  std::string text = kBase;
  text.replace(text.find("pcie-4gpu.yaml"), 14, "eth-100gbe-4node.yaml");
  const LoadedScenario l = load_scenario_text(text + ps, kInline);
  const Topology& t = l.topology.topology;
  CHECK(l.scenario.sync.ps.servers == 2);  // defaults to the host count
  REQUIRE(l.server_hosts.size() == 2);
  CHECK(data_parallel_ranks(32, l.scenario.sync) == 32);  // every GPU trains
  for (std::size_t j = 0; j < 2; ++j) {
    const DeviceId cpu = l.server_hosts[j];
    CHECK(t.device(cpu).kind == DeviceKind::Cpu);
    CHECK(t.device(cpu).name == "ps" + std::to_string(j));
    CHECK(t.device(cpu).node == 4 + static_cast<int>(j));  // a machine of its own
    // CPU - PCIe - NIC - 50 Gb/s ethernet - the switch of server j's first NIC.
    REQUIRE(t.links_of(cpu).size() == 1);
    const DeviceId nic = t.link(t.links_of(cpu)[0]).other(cpu);
    CHECK(t.device(nic).kind == DeviceKind::Nic);
    const auto& nic_links = t.links_of(nic);
    REQUIRE(nic_links.size() == 2);
    const Link& cable = t.link(nic_links[1]);
    CHECK(cable.fabric == Fabric::Ethernet);
    CHECK(cable.bandwidth.bytes_per_second() == doctest::Approx(50e9 / 8));
    CHECK(t.device(cable.other(nic)).kind == DeviceKind::Switch);
  }
  // Without nic_bandwidth the hosts' NICs run at the servers' rate (100 GbE here).
  const LoadedScenario same = load_scenario_text(
      text + "sync:\n  strategy: ps\n  ps: {hosts: {count: 1}}\n", kInline);
  const DeviceId nic = same.topology.topology.link(
      same.topology.topology.links_of(same.server_hosts[0])[0]).other(same.server_hosts[0]);
  CHECK(same.topology.topology.link(same.topology.topology.links_of(nic)[1])
            .bandwidth.bytes_per_second() == doctest::Approx(100e9 / 8));

  // Contradictions are errors at the key that contradicts.
  const auto servers = error_in(text + "sync:\n  strategy: ps\n  ps: {servers: 3, hosts: {count: 2}}\n");
  REQUIRE(servers);
  CHECK(contains(servers->what(), "3 servers on 2 hosts"));
  const auto colocated =
      error_in(text + "sync:\n  strategy: ps\n  ps: {placement: colocated, hosts: {count: 2}}\n");
  REQUIRE(colocated);
  CHECK(contains(colocated->what(), "colocated servers run on the GPUs"));
  for (const char* rate : {"0Gbps", "1000TB/s"}) {  // a link rate: positive, at most 100 TB/s
    const auto bad = error_in(text + "sync:\n  strategy: ps\n  ps: {hosts: {count: 2, nic_bandwidth: " +
                              rate + "}}\n");
    REQUIRE(bad);
    CHECK(contains(bad->what(), "sync.ps.hosts.nic_bandwidth"));
    CHECK(bad->where().line == 13);  // the ps: line holding the value
  }
  const auto unknown = error_in(text + "sync:\n  strategy: ps\n  ps: {hosts: {count: 2, nic: 1Gbps}}\n");
  REQUIRE(unknown);
  CHECK(contains(unknown->what(), "unknown key 'nic'"));
  // One server alone has no switch to cable a host to: the error points at `hosts:`.
  const auto alone = error_in(kBase + "sync:\n  strategy: ps\n  ps:\n    hosts: {count: 1}\n");
  REQUIRE(alone);
  CHECK(alone->where().line == 14);  // the hosts: line
  CHECK(contains(alone->what(), "has no NIC on one"));
}
