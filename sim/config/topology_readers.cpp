// Readers shared by both topology forms (topology_readers.hpp).
#include "topology_readers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/collective/collective.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "topology_keys.hpp"

namespace gradsync::config {

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

BytesPerSecond link_rate(const MapReader& r, const std::string& key) {
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
LinkGroupSpec read_group(const MapReader& r, Fabric fabric, bool latency_required) {
  LinkGroupSpec g;
  g.fabric = fabric;
  g.bandwidth = link_rate(r, "bandwidth");
  g.latency = latency_required || r.has("latency") ? link_latency(r, "latency") : Seconds(0.0);
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
               "rto_min", "switch_buffer", "send_window", "incast_flows", "rtt_bias",
               "host_rtt"});
  TcpOptions o;
  if (r.has("host_cap")) o.host_cap = link_rate(r, "host_cap");
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
  o.incast_flows =
      static_cast<int>(r.opt_integer("incast_flows", 2, 65536).value_or(o.incast_flows));
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
  MapReader r(parent.node("cost"), parent.file(), "cost", kCostKeys);
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
  if (r.has("networks")) {
    std::size_t i = 0;
    for (const YAML::Node& item : config::sequence_of(r.node("networks"), r.file(), "cost.networks")) {
      MapReader n(item, r.file(), fmt::format("cost.networks.{}", i++), kCostNetworkKeys);
      NetworkPrice p;
      p.fabric = *fabric_from_string(n.choice("fabric", kNetworkFabrics));
      p.gbps = link_rate(n, "bandwidth").bytes_per_second() * 8.0 / 1e9;
      for (const auto& [key, into] : {std::pair{"nic", &p.nic}, std::pair{"switch_port", &p.switch_port},
                                      std::pair{"cable", &p.cable}}) {
        *into = n.number(key);
        if (*into < 0.0) n.fail(key, "a price must not be negative");
      }
      for (const NetworkPrice& q : c.networks)
        if (q.fabric == p.fabric && std::abs(q.gbps - p.gbps) < 1e-6)
          n.fail("bandwidth", "this network is priced twice in cost.networks");
      c.networks.push_back(p);
    }
  }
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
              {"cpu", "protocols", "algorithms", "tuner", "latency_scale", "channel_scale",
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
  if (r.has("algorithms")) {
    n.algorithms_origin = r.mark("algorithms");
    const std::string names = fmt::format("{}", fmt::join(kNcclTunerAlgorithms, ", "));
    for (const YAML::Node& item :
         config::sequence_of(r.node("algorithms"), r.file(), "nccl.algorithms")) {
      const SourceMark at = mark_of(item, r.file());
      if (!item.IsScalar())
        throw ConfigError(at, fmt::format("nccl.algorithms: expected an algorithm name ({})", names));
      const std::string a = item.as<std::string>();
      if (std::find(kNcclTunerAlgorithms.begin(), kNcclTunerAlgorithms.end(), a) ==
          kNcclTunerAlgorithms.end())
        throw ConfigError(at, fmt::format("nccl.algorithms: unknown algorithm '{}' (expected {})",
                                          a, names));
      if (std::find(n.algorithms.begin(), n.algorithms.end(), a) == n.algorithms.end())
        n.algorithms.push_back(a);
    }
    if (n.algorithms.empty())
      throw ConfigError(n.algorithms_origin, "nccl.algorithms: name at least one algorithm");
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
      if (!n.algorithms.empty() &&
          std::find(n.algorithms.begin(), n.algorithms.end(), t.algorithm) == n.algorithms.end())
        rule.fail("algorithm", fmt::format("'{}' is not among nccl.algorithms", t.algorithm));
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

}  // namespace gradsync::config
