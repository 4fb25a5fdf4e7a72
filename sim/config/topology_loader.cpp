// Topology files (README.md, Topology files), both forms: the cluster template (nodes:, node:,
// network:) expanded by expand_cluster(), and the explicit form (devices:, links:).
#include <charconv>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "gradsync/collective.hpp"
#include "gradsync/config.hpp"
#include "gradsync/fabric_defaults.hpp"
#include "gradsync/fabric_model.hpp"
#include "name_ranges.hpp"
#include "yaml_reader.hpp"

namespace gradsync {

namespace {

using config::MapReader;
using config::mark_of;

// Bounds that catch typos before they become a multi-gigabyte graph.
constexpr std::size_t kMaxExplicitDevices = 1'000'000;
constexpr std::size_t kMaxExplicitLinks = 4'000'000;
constexpr long long kMaxNodes = 100'000;
constexpr long long kMaxGpusPerNode = 1024;
constexpr long long kMaxGpus = 262'144;
constexpr long long kMaxNics = 524'288;      // network endpoints: 2 per GPU at the largest
constexpr long long kMaxMeshGpus = 32;       // a full NVLink mesh is G(G-1)/2 links per server

const std::vector<std::string> kTemplateKeys{"name", "software", "gpu", "nodes", "node",
                                             "network", "cost", "nccl"};
const std::vector<std::string> kExplicitKeys{"name",      "software", "gpu",       "devices",
                                             "links",     "cost",     "roce",      "routing",
                                             "qps",       "ecmp_seed", "tcp",
                                             "nvls_efficiency", "nccl"};
const std::vector<std::string> kRouting{"static", "adaptive"};
constexpr long long kMaxQps = 128;  // NCCL_IB_MAX_QPS (NVIDIA/nccl src/transport/net_ib)
const std::vector<std::string> kLinkGroupKeys{"fabric",     "switch", "bandwidth", "latency",
                                              "efficiency", "p2p",    "nvls_efficiency"};
const std::vector<std::string> kSoftware = software_names();
const std::vector<std::string> kNetworkFabrics = fabric_names(/*network_only=*/true);
const std::vector<std::string> kShapes = network_shape_names();
const std::vector<std::string> kDeviceKinds = device_kind_names();
const std::vector<std::string> kFabrics = fabric_names();

// NVLS's share of the GPU port's effective NVLink bandwidth (nccl_model.hpp,
// kNvlsBandwidthFactor), when the file overrides it.
std::optional<double> nvls_efficiency_of(const MapReader& r) {
  const auto e = r.opt_number("nvls_efficiency");
  if (e && !(*e > 0.0 && *e <= 1.0))
    r.fail("nvls_efficiency",
           fmt::format("must be in (0, 1] (NVLS's share of the NVLink port), got {}", *e));
  return e;
}

std::optional<double> efficiency_of(const MapReader& r) {
  const auto e = r.opt_number("efficiency");
  if (e && !(*e > 0.0 && *e <= 1.0))
    r.fail("efficiency", fmt::format("must be in (0, 1] (a share of line rate), got {}", *e));
  return e;
}

// Plausibility bounds: values beyond them are typos (a unit off by 1000), not hardware.
// The fastest link of any shipped system is NVLink5, 900 GB/s per GPU per direction.
constexpr double kMaxRate = 100e12;      // B/s: 100 TB/s per link
constexpr double kMaxLatency = 1.0;      // s per link or device (a WAN round trip is ~0.1 s)
constexpr double kMaxBuffer = 1099511627776.0;  // 1 TiB

BytesPerSecond positive_rate(const MapReader& r, const std::string& key) {
  const BytesPerSecond bw = r.rate(key);
  if (!(bw.bytes_per_second() > 0.0)) r.fail(key, "must be positive");
  if (bw.bytes_per_second() > kMaxRate)
    r.fail(key, fmt::format("{:.4g}GB/s is beyond any link (at most 100TB/s; NVLink5 is "
                            "900GB/s per GPU): a unit typo?",
                            bw.bytes_per_second() / 1e9));
  return bw;
}

// A time of at most max_seconds (the unit parser rejects negative ones); `what` says the bound.
Seconds bounded_time(const MapReader& r, const std::string& key, double max_seconds,
                     std::string_view what) {
  const Seconds t = r.time(key);
  if (t.seconds() > max_seconds)
    r.fail(key, fmt::format("{:.4g}s is too long ({}): a unit typo?", t.seconds(), what));
  return t;
}
Seconds link_latency(const MapReader& r, const std::string& key) {
  return bounded_time(r, key, kMaxLatency, "at most 1s per link or device");
}
// A buffer or window size in (0, 1 TiB] (zero allowed when allow_zero; the unit parser
// rejects negative ones).
Bytes bounded_size(const MapReader& r, const std::string& key, bool allow_zero) {
  const Bytes b = r.size(key);
  if (!allow_zero && b.bytes() == 0.0) r.fail(key, "must be positive");
  if (b.bytes() > kMaxBuffer) r.fail(key, "must be at most 1TiB");
  return b;
}

// bandwidth / latency / efficiency (+ fabric and switch where the group has them).
LinkGroupSpec read_group(const MapReader& r, Fabric fabric) {
  LinkGroupSpec g;
  g.fabric = fabric;
  g.bandwidth = positive_rate(r, "bandwidth");
  g.latency = link_latency(r, "latency");
  g.efficiency = efficiency_of(r);
  g.origin = r.mark();
  return g;
}

RoceOptions read_roce(const MapReader& parent, const std::string& key) {
  MapReader r(parent.node(key), parent.file(), parent.path(key),
              {"pfc", "ecn", "buffer", "retransmit_timeout"});
  RoceOptions o;
  o.pfc = r.opt_boolean("pfc").value_or(true);
  o.ecn = r.opt_boolean("ecn").value_or(true);
  if (r.has("buffer")) {
    o.buffer = bounded_size(r, "buffer", false);
  }
  if (r.has("retransmit_timeout")) {
    // InfiniBand's largest local ACK timeout: 4.096 us x 2^31 (NCCL_IB_TIMEOUT 31) = 8796 s.
    o.retransmit_timeout = bounded_time(r, "retransmit_timeout", 4.096e-6 * 2147483648.0,
                                        "at most 8796s, 4.096us x 2^31");
  }
  return o;
}

// `tcp:` (network: in the template, top level in the explicit form): the Ethernet (TCP)
// model's overrides (tcp_model.hpp; defaults and sources in sim/fabric/README.md).
TcpOptions read_tcp(const MapReader& parent, const std::string& key) {
  MapReader r(parent.node(key), parent.file(), parent.path(key),
              {"host_efficiency", "host_cap", "slow_start", "initial_window", "mss", "incast",
               "rto_min", "switch_buffer", "send_window", "rtt_bias", "host_rtt"});
  TcpOptions o;
  if (r.has("host_cap")) o.host_cap = positive_rate(r, "host_cap");
  if (const auto e = r.opt_number("host_efficiency")) {
    if (r.has("host_cap"))
      r.fail("host_efficiency", "give host_cap (a rate) or host_efficiency (a share), not both");
    if (!(*e > 0.0 && *e <= 1.0))
      r.fail("host_efficiency", fmt::format("must be in (0, 1] (a share of the host port's line "
                                            "rate), got {}", *e));
    o.host_efficiency = *e;
  }
  o.slow_start = r.opt_boolean("slow_start").value_or(o.slow_start);
  o.initial_window = static_cast<int>(
      r.opt_integer("initial_window", 1, 1000).value_or(o.initial_window));
  if (r.has("mss")) {
    o.mss = r.size("mss");
    if (o.mss.bytes() < 1.0 || o.mss.bytes() > 65535.0)
      r.fail("mss", fmt::format("must be between 1B and 65535B (one TCP segment), got {}B",
                                o.mss.bytes()));
  }
  o.incast = r.opt_boolean("incast").value_or(o.incast);
  if (r.has("rto_min")) {
    o.rto_min = bounded_time(r, "rto_min", 120.0, "at most 120s, Linux's TCP_RTO_MAX");
  }
  if (r.has("switch_buffer")) {
    o.switch_buffer = bounded_size(r, "switch_buffer", true);
  }
  if (r.has("send_window")) {
    o.send_window = bounded_size(r, "send_window", false);
  }
  o.rtt_bias = r.opt_boolean("rtt_bias").value_or(o.rtt_bias);
  if (r.has("host_rtt")) {
    o.host_rtt = bounded_time(r, "host_rtt", kMaxLatency, "at most 1s");
  }
  return o;
}

// `routing`, `qps`, `ecmp_seed` (network: in the template, top level in the explicit form).
RoutingOptions read_routing(const MapReader& r) {
  RoutingOptions o;
  if (const auto mode = r.opt_choice("routing", kRouting)) o.mode = routing_from_string(*mode);
  o.qps = static_cast<std::uint32_t>(r.opt_integer("qps", 1, kMaxQps).value_or(1));
  o.seed = static_cast<std::uint64_t>(
      r.opt_integer("ecmp_seed", 0, std::numeric_limits<long long>::max()).value_or(0));
  return o;
}

CostSpec read_cost(const MapReader& parent) {
  MapReader r(parent.node("cost"), parent.file(), "cost",
              {"currency", "gpu", "nic", "switch_port", "cable", "node", "total"});
  CostSpec c;
  c.currency = r.opt_string("currency").value_or("USD");
  auto price = [&](const std::string& key) {
    const double v = r.opt_number(key).value_or(0.0);
    if (v < 0.0) r.fail(key, "a price must not be negative");
    return v;
  };
  c.gpu = price("gpu");
  c.nic = price("nic");
  c.switch_port = price("switch_port");
  c.cable = price("cable");
  c.node = price("node");
  c.total_override = price("total");
  return c;
}

// `nccl:` {protocols: [ll, ll128, simple], tuner: [{min_bytes, max_bytes, algorithm,
// protocol}]} (topology.hpp NcclSettings).
const std::vector<std::string> kNcclProtocols{"ll", "ll128", "simple"};
const std::vector<std::string> kNcclTunerAlgorithms =
    algorithm_names([](const AlgorithmInfo& a) { return a.nccl; });

NcclSettings read_nccl(const MapReader& top) {
  NcclSettings n;
  if (!top.has("nccl")) return n;
  MapReader r(top.node("nccl"), top.file(), "nccl",
              {"cpu", "protocols", "tuner", "latency_scale", "channel_scale",
               "nvls_chunk_overhead"});
  // Scales of NCCL's own constants: a factor of 100 either way is beyond any machine NCCL's
  // tables were written for, so it is a typo, not a measurement.
  const auto scale = [&](const char* key) {
    const auto v = r.opt_number(key);
    if (!v) return 1.0;
    if (!(*v >= 0.01 && *v <= 100.0))
      r.fail(key, fmt::format("{} is outside [0.01, 100] (a factor on NCCL's constant; 1 = "
                              "NCCL's own)", *v));
    return *v;
  };
  n.latency_scale = scale("latency_scale");
  n.channel_scale = scale("channel_scale");
  if (const auto t = r.opt_time("nvls_chunk_overhead")) {
    if (t->seconds() > 1e-3)
      r.fail("nvls_chunk_overhead", fmt::format("{} per 128 KiB chunk is absurd (at most 1ms)",
                                                format_time(*t)));
    n.nvls_chunk_overhead_s = t->seconds();
  }
  n.cpu_amd = r.opt_choice("cpu", {"intel", "amd"}).value_or("intel") == "amd";
  if (r.has("protocols")) {
    n.ll = n.ll128 = n.simple = false;
    for (const YAML::Node& item : config::sequence_of(r.node("protocols"), r.file(), "nccl.protocols")) {
      const SourceMark at = mark_of(item, r.file());
      if (!item.IsScalar())
        throw ConfigError(at, "nccl.protocols: expected a protocol name (ll, ll128, simple)");
      const std::string p = item.as<std::string>();
      if (p == "ll") n.ll = true;
      else if (p == "ll128") n.ll128 = true;
      else if (p == "simple") n.simple = true;
      else
        throw ConfigError(at, fmt::format("nccl.protocols: unknown protocol '{}' (expected ll, "
                                          "ll128 or simple)", p));
    }
    if (!n.ll && !n.ll128 && !n.simple)
      throw ConfigError(r.mark("protocols"), "nccl.protocols: name at least one protocol");
  }
  if (r.has("tuner")) {
    for (const YAML::Node& item : config::sequence_of(r.node("tuner"), r.file(), "nccl.tuner")) {
      MapReader rule(item, r.file(), "nccl.tuner rule",
                     {"min_bytes", "max_bytes", "algorithm", "protocol"});
      NcclTunerRule t;
      t.origin = rule.mark();
      if (rule.has("min_bytes")) t.min_bytes = rule.size("min_bytes").bytes();
      if (rule.has("max_bytes")) t.max_bytes = rule.size("max_bytes").bytes();
      if (t.max_bytes < t.min_bytes)
        rule.fail("max_bytes", "must not be below min_bytes");
      t.algorithm = rule.choice("algorithm", kNcclTunerAlgorithms);
      if (rule.has("protocol")) {
        t.protocol = rule.choice("protocol", kNcclProtocols);
        const bool on = t.protocol == "ll" ? n.ll : t.protocol == "ll128" ? n.ll128 : n.simple;
        if (!on) rule.fail("protocol", fmt::format("'{}' is not among nccl.protocols", t.protocol));
        if ((t.algorithm == "nvls" || t.algorithm == "nvlstree") && t.protocol != "simple")
          rule.fail("protocol", "NVLS and NVLSTree run the simple protocol only");
      }
      n.tuner.push_back(std::move(t));
    }
  }
  return n;
}

SoftwareModel read_software(const MapReader& r) {
  return *software_from_string(r.opt_choice("software", kSoftware).value_or("nccl"));
}

// `gpu: h100`: the GPU model (or generation) of every GPU; NCCL's per-architecture tables and
// NVLS depend on it.
std::optional<GpuGeneration> read_gpu(const MapReader& r) {
  const auto model = r.opt_choice("gpu", gpu_model_names());
  if (!model) return std::nullopt;
  return gpu_generation_from_string(*model);
}

// ---- cluster template -----------------------------------------------------------------

NodeSpec read_node(const MapReader& top) {
  MapReader r(top.node("node"), top.file(), "node",
              {"gpus", "intra", "sockets", "socket_link", "nics", "nic_bandwidth", "pcie"});
  NodeSpec n;
  n.origin = r.mark();
  n.gpus = static_cast<int>(r.integer("gpus", 1, kMaxGpusPerNode));
  {
    MapReader intra(r.node("intra"), r.file(), "node.intra", kLinkGroupKeys);
    const auto fabric = *fabric_from_string(intra.choice("fabric", {"nvlink", "pcie"}));
    n.intra = read_group(intra, fabric);
    const bool has_switch = intra.opt_boolean("switch").value_or(true);
    if (!has_switch && fabric == Fabric::NvLink && n.gpus > kMaxMeshGpus)
      intra.fail("switch", fmt::format("false (a direct NVLink mesh) joins at most {} GPUs, got "
                                       "node.gpus: {}; use switch: true (NVSwitch)",
                                       kMaxMeshGpus, n.gpus));
    n.intra_shape = has_switch ? IntraShape::Switch
                    : fabric == Fabric::NvLink ? IntraShape::Mesh
                                               : IntraShape::RootComplex;
    // p2p: whether GPUs under the PCIe switch exchange data peer to peer (Device::p2p).
    if (const auto p2p = intra.opt_boolean("p2p")) {
      if (fabric != Fabric::Pcie || !has_switch)
        intra.fail("p2p", fabric != Fabric::Pcie
                              ? "applies to fabric: pcie with switch: true only (NVLink is "
                                "peer to peer)"
                              : "applies to switch: true only (with switch: false GPU traffic "
                                "already turns at the CPU root complex)");
      n.pcie_p2p = *p2p;
    }
    if (intra.has("nvls_efficiency")) {
      if (fabric != Fabric::NvLink || !has_switch)
        intra.fail("nvls_efficiency", "applies to fabric: nvlink with switch: true only (NVLS "
                                      "reduces in the NVSwitch)");
      n.nvls_efficiency = nvls_efficiency_of(intra);
    }
  }
  n.sockets = static_cast<int>(r.opt_integer("sockets", 1, 8).value_or(1));
  if (r.has("socket_link")) {
    MapReader s(r.node("socket_link"), r.file(), "node.socket_link",
                {"bandwidth", "latency", "efficiency"});
    n.socket_link = read_group(s, Fabric::Socket);
  }
  n.nics = static_cast<int>(r.opt_integer("nics", 0, 1024).value_or(0));
  if (r.has("nic_bandwidth")) n.nic_bandwidth = positive_rate(r, "nic_bandwidth");
  if (r.has("pcie")) {
    MapReader p(r.node("pcie"), r.file(), "node.pcie", {"bandwidth", "latency", "efficiency"});
    n.pcie = read_group(p, Fabric::Pcie);
  }
  if (n.nics > 0 && !r.has("nic_bandwidth"))
    throw ConfigError(r.mark(), "missing required key 'nic_bandwidth' in node (node.nics > 0)");
  if (n.nics > 0 && !n.pcie)
    throw ConfigError(r.mark(), "missing required key 'pcie' in node (the GPU/CPU <-> NIC link; "
                                "node.nics > 0)");
  if (n.sockets > 1 && !n.socket_link)
    throw ConfigError(r.mark(), "missing required key 'socket_link' in node (node.sockets > 1)");
  return n;
}

NetworkSpec read_network(const MapReader& top) {
  MapReader r(top.node("network"), top.file(), "network",
              {"fabric", "shape", "hosts_per_leaf", "oversubscription", "spines", "radix",
               "link_latency", "switch_latency", "efficiency", "roce", "routing", "qps",
               "ecmp_seed", "tcp", "sharp"});
  NetworkSpec net;
  net.origin = r.mark();
  net.fabric = *fabric_from_string(r.choice("fabric", kNetworkFabrics));
  net.shape = *network_shape_from_string(r.choice("shape", kShapes));
  net.hosts_per_leaf = static_cast<int>(r.opt_integer("hosts_per_leaf", 1, kMaxNodes).value_or(0));
  net.oversubscription = r.opt_number("oversubscription").value_or(1.0);
  if (net.oversubscription < 1.0 || net.oversubscription > 64.0)
    r.fail("oversubscription", fmt::format("must be between 1 (non-blocking) and 64, got {}",
                                           net.oversubscription));
  net.spines = static_cast<int>(r.opt_integer("spines", 1, 4096).value_or(0));
  net.radix = static_cast<int>(r.opt_integer("radix", 4, 256).value_or(0));
  if (net.radix % 2 != 0) r.fail("radix", "a fat-tree radix must be even");
  if (net.radix != 0 && net.shape != NetworkShape::FatTree)
    r.fail("radix", "applies to shape: fat-tree only");
  if (net.hosts_per_leaf != 0 && net.shape != NetworkShape::LeafSpine &&
      net.shape != NetworkShape::RailOptimized)
    r.fail("hosts_per_leaf", "applies to shapes leaf-spine and rail-optimized only");
  if (net.shape == NetworkShape::LeafSpine && !r.has("hosts_per_leaf"))
    throw ConfigError(r.mark(), "missing required key 'hosts_per_leaf' in network "
                                "(servers per leaf switch, for shape: leaf-spine)");
  net.link_latency = link_latency(r, "link_latency");
  // A direct cable crosses no switch: switch_latency is optional there (and unused).
  net.switch_latency = net.shape == NetworkShape::Direct && !r.has("switch_latency")
                           ? Seconds(0.0)
                           : link_latency(r, "switch_latency");
  net.efficiency = efficiency_of(r);
  net.routing = read_routing(r);
  net.sharp = r.opt_boolean("sharp").value_or(false);
  if (net.sharp && net.fabric != Fabric::InfiniBand)
    r.fail("sharp", fmt::format("in-network reduction (SHARP) needs fabric: infiniband, not {}",
                                to_string(net.fabric)));
  // `roce:` ("roce only") is accepted and checked on every fabric, so a template keeps it when
  // its fabric is switched (topology_overrides.network.fabric), and takes effect on roce alone.
  if (r.has("roce")) {
    if (net.fabric == Fabric::Efa)
      r.fail("roce", "applies to fabric: roce; EFA's SRD transport has no PFC or ECN to set");
    const RoceOptions roce = read_roce(r, "roce");
    if (net.fabric == Fabric::Roce) net.roce = roce;
  }
  if (r.has("tcp")) {
    const TcpOptions tcp = read_tcp(r, "tcp");
    if (net.fabric != Fabric::Ethernet)
      r.fail("tcp", fmt::format("applies to fabric: ethernet only (this network is {})",
                                to_string(net.fabric)));
    net.tcp = tcp;
  }
  return net;
}

ClusterSpec read_cluster(const MapReader& top, const std::string& default_name) {
  ClusterSpec spec;
  spec.origin = top.mark();
  spec.name = top.opt_string("name").value_or(default_name);
  spec.software = read_software(top);
  spec.gpu = read_gpu(top);
  spec.gpu_model = top.opt_string("gpu").value_or("");
  spec.nccl = read_nccl(top);
  spec.nodes = static_cast<int>(top.integer("nodes", 1, kMaxNodes));
  spec.node = read_node(top);
  if (top.has("network")) spec.network = read_network(top);
  if (spec.nodes > 1 && !spec.network)
    throw ConfigError(top.mark(), "missing required key 'network' (nodes > 1 need a network)");
  if (spec.network && spec.node.nics == 0)
    throw ConfigError(mark_of(top.node("node"), top.file()),
                      "node.nics must be at least 1 when a network: is given");
  if (top.has("cost")) spec.cost = read_cost(top);
  const long long gpus = static_cast<long long>(spec.nodes) * spec.node.gpus;
  if (gpus > kMaxGpus)
    top.fail("nodes", fmt::format("{} nodes x {} GPUs = {} GPUs; gradsync simulates at most "
                                  "{}", spec.nodes, spec.node.gpus, gpus, kMaxGpus));
  const long long nics = static_cast<long long>(spec.nodes) * spec.node.nics;
  if (nics > kMaxNics) {
    const YAML::Node node_map = top.node("node");
    throw ConfigError(mark_of(node_map["nics"], top.file()),
                      fmt::format("node.nics: {} nodes x {} NICs = {} NICs; gradsync simulates "
                                  "at most {}", spec.nodes, spec.node.nics, nics, kMaxNics));
  }
  return spec;
}

// ---- explicit form --------------------------------------------------------------------

Topology read_explicit(const MapReader& top, const std::string& default_name) {
  Topology topo(top.opt_string("name").value_or(default_name));
  topo.set_origin(top.mark());
  topo.set_software(read_software(top));
  topo.set_gpu_generation(read_gpu(top));
  topo.set_gpu_model(top.opt_string("gpu").value_or(""));
  topo.set_nvls_efficiency(nvls_efficiency_of(top));
  topo.set_nccl(read_nccl(top));
  if (top.has("cost")) topo.set_cost(read_cost(top));
  if (top.has("roce")) topo.set_roce(read_roce(top, "roce"));
  if (top.has("tcp")) topo.set_tcp(read_tcp(top, "tcp"));
  topo.set_routing(read_routing(top));

  std::unordered_map<std::string, DeviceId> by_name;
  for (const YAML::Node& item : config::sequence_of(top.node("devices"), top.file(), "devices")) {
    MapReader d(item, top.file(), "device", {"name", "kind", "node", "latency", "p2p", "sharp"});
    const std::string pattern = d.string("name");
    std::vector<config::ExpandedName> names;
    try {
      names = config::expand_name_pattern(pattern,
                                          kMaxExplicitDevices - topo.devices().size());
    } catch (const std::invalid_argument& e) {
      d.fail("name", e.what());
    }
    const auto kind = *device_kind_from_string(d.choice("kind", kDeviceKinds));
    const Seconds latency = d.has("latency") ? link_latency(d, "latency") : Seconds(0.0);
    // p2p (pcie-switch only): false = GPUs under it exchange data through host memory.
    const auto p2p = d.opt_boolean("p2p");
    if (p2p && kind != DeviceKind::PcieSwitch)
      d.fail("p2p", fmt::format("applies to devices of kind pcie-switch only, not {}",
                                to_string(kind)));
    // sharp (switch only): the switch reduces in the network (Device::sharp).
    const auto sharp = d.opt_boolean("sharp");
    if (sharp && kind != DeviceKind::Switch)
      d.fail("sharp", fmt::format("applies to devices of kind switch only, not {}",
                                  to_string(kind)));
    // node: a number, or "$k" = the value of the k-th bracket of the name.
    std::optional<long long> node_fixed;
    std::optional<std::size_t> node_bracket;
    if (d.has("node")) {
      const std::string s = d.string("node");
      if (!s.empty() && s[0] == '$') {
        long long k = 0;
        const auto [ptr, ec] = std::from_chars(s.data() + 1, s.data() + s.size(), k);
        if (ec != std::errc() || ptr != s.data() + s.size() || k < 1 ||
            static_cast<std::size_t>(k) > names.front().indices.size())
          d.fail("node", fmt::format("'{}' names no bracket of '{}' ($1 is the first)", s, pattern));
        node_bracket = static_cast<std::size_t>(k - 1);
      } else {
        node_fixed = d.integer("node", 0, kMaxNodes);
      }
    }
    for (auto& n : names) {
      if (by_name.count(n.name) != 0)
        d.fail("name", fmt::format("device '{}' is declared twice", n.name));
      if (node_bracket && n.indices[*node_bracket] > kMaxNodes)
        d.fail("node", fmt::format("${} gives {} node {}; a node index is at most {}",
                                   *node_bracket + 1, n.name, n.indices[*node_bracket],
                                   kMaxNodes));
      const int node = node_bracket ? static_cast<int>(n.indices[*node_bracket])
                                    : static_cast<int>(node_fixed.value_or(-1));
      Device device{n.name, kind, node, latency, d.mark("name")};
      device.p2p = p2p.value_or(true);
      device.sharp = sharp.value_or(false);
      by_name.emplace(n.name, topo.add_device(std::move(device)));
    }
  }

  std::vector<std::string> all_names;
  auto resolve = [&](const MapReader& l, const YAML::Node& side) {
    if (!side.IsScalar())
      throw ConfigError(mark_of(side, l.file()), "each end of 'between' must be a device name");
    std::vector<config::ExpandedName> names;
    try {
      names = config::expand_name_pattern(side.Scalar(), kMaxExplicitDevices);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(mark_of(side, l.file()), e.what());
    }
    std::vector<DeviceId> ids;
    for (const auto& n : names) {
      const auto it = by_name.find(n.name);
      if (it == by_name.end()) {
        if (all_names.empty())
          for (const auto& dev : topo.devices()) all_names.push_back(dev.name);
        const std::string near = all_names.size() <= 100'000
                                     ? config::closest_match(n.name, all_names) : "";
        throw ConfigError(mark_of(side, l.file()),
                          fmt::format("unknown device '{}'{}", n.name,
                                      near.empty() ? " (declare it under devices:)"
                                                   : fmt::format("; did you mean '{}'?", near)));
      }
      ids.push_back(it->second);
    }
    return ids;
  };

  for (const YAML::Node& item : config::sequence_of(top.node("links"), top.file(), "links")) {
    MapReader l(item, top.file(), "link",
                {"between", "fabric", "bandwidth", "latency", "efficiency", "duplex"});
    const auto ends = config::sequence_of(l.node("between"), l.file(), "link.between");
    if (ends.size() != 2)
      l.fail("between", fmt::format("expected two ends [a, b], got {}", ends.size()));
    const auto left = resolve(l, ends[0]);
    const auto right = resolve(l, ends[1]);
    if (left.size() != right.size() && left.size() != 1 && right.size() != 1)
      l.fail("between", fmt::format("the two ends expand to {} and {} devices; use one device "
                                    "on a side, or equal counts to pair them up",
                                    left.size(), right.size()));
    Link proto;
    proto.fabric = *fabric_from_string(l.choice("fabric", kFabrics));
    proto.bandwidth = positive_rate(l, "bandwidth");
    proto.latency = link_latency(l, "latency");
    proto.efficiency = efficiency_of(l).value_or(default_efficiency(proto.fabric));
    proto.duplex = l.opt_choice("duplex", {"full", "half"}).value_or("full") == "half"
                       ? Duplex::Half : Duplex::Full;
    proto.origin = l.mark();
    const std::size_t count = std::max(left.size(), right.size());
    if (topo.links().size() + count > kMaxExplicitLinks)
      l.fail("between", fmt::format("the topology would have more than {} links",
                                    kMaxExplicitLinks));
    for (std::size_t i = 0; i < count; ++i) {
      Link link = proto;
      link.a = left[left.size() == 1 ? 0 : i];
      link.b = right[right.size() == 1 ? 0 : i];
      if (link.a == link.b)
        l.fail("between", fmt::format("links {} to itself", topo.device(link.a).name));
      topo.add_link(link);
    }
  }
  // SHARP is InfiniBand's in-network reduction: a sharp switch reduces what reaches it over
  // InfiniBand only.
  for (DeviceId id = 0; id < topo.devices().size(); ++id) {
    const Device& d = topo.device(id);
    if (!d.sharp) continue;
    for (LinkId l : topo.links_of(id))
      if (topo.link(l).fabric != Fabric::InfiniBand)
        throw ConfigError(d.origin,
                          fmt::format("device.sharp: switch '{}' has a link of fabric {}; in-network "
                                      "reduction (SHARP) needs InfiniBand links only",
                                      d.name, to_string(topo.link(l).fabric)));
  }
  topo.validate();
  return topo;
}

TopologyFile load_from_root(const YAML::Node& root, const std::string& file,
                            const std::filesystem::path& path) {
  if (!root.IsDefined() || root.IsNull())
    throw ConfigError(SourceMark{file, 1, 1},
                      "empty file: expected a topology (README.md, Topology files)");
  if (!root.IsMap())
    throw ConfigError(mark_of(root, file), "a topology file must be a mapping (key: value lines)");
  const bool explicit_form = root["devices"].IsDefined() || root["links"].IsDefined();
  const bool template_form = root["nodes"].IsDefined() || root["node"].IsDefined() ||
                             root["network"].IsDefined();
  const std::string default_name = path.stem().string();
  TopologyFile out;
  out.path = path;
  if (explicit_form && template_form) {
    // Point at the first explicit-form key as written.
    SourceMark at = mark_of(root, file);
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key = it->first;
      if (key.IsScalar() && (key.Scalar() == "devices" || key.Scalar() == "links")) {
        at = mark_of(key, file);
        break;
      }
    }
    throw ConfigError(at,
                      "a topology is either a cluster template (nodes:, node:, network:) or an "
                      "explicit graph (devices:, links:), not both");
  }
  if (explicit_form) {
    MapReader top(root, file, "", kExplicitKeys);
    out.topology = read_explicit(top, default_name);
  } else if (template_form) {
    MapReader top(root, file, "", kTemplateKeys);
    out.cluster = read_cluster(top, default_name);
    out.topology = expand_cluster(*out.cluster);
  } else {
    // Neither form: check the keys anyway so a typo ("node s:") gets its suggestion.
    std::vector<std::string> all = kTemplateKeys;
    all.insert(all.end(), kExplicitKeys.begin(), kExplicitKeys.end());
    MapReader top(root, file, "", all);
    throw ConfigError(top.mark(), "expected a cluster template (nodes:, node:) or an explicit "
                                  "graph (devices:, links:)");
  }
  return out;
}

}  // namespace

TopologyFile load_topology_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  const YAML::Node root = config::load_yaml_file(file);
  return load_from_root(root, file, path);
}

TopologyFile load_topology_text(const std::string& text, const std::string& display_name) {
  const YAML::Node root = config::parse_yaml(text, display_name);
  return load_from_root(root, display_name, std::filesystem::path(display_name));
}

}  // namespace gradsync
