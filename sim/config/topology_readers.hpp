// Internal to sim/config: readers of the values and groups both topology forms share (link
// groups, rates and latencies within bounds, RoCE, TCP, routing, cost, nccl, software, gpu).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"
#include "yaml_reader.hpp"

namespace gradsync::config {

// NVLS's share of the GPU port's effective NVLink bandwidth (nccl_model.hpp,
// kNvlsBandwidthFactor), when the file overrides it.
[[nodiscard]] std::optional<double> nvls_efficiency_of(const MapReader& r);

[[nodiscard]] std::optional<double> efficiency_of(const MapReader& r);

// A link rate: positive and at most 100 TB/s (beyond is a unit typo).
[[nodiscard]] BytesPerSecond link_rate(const MapReader& r, const std::string& key);

// A time of at most max_seconds (the unit parser rejects negative ones); `what` says the bound.
[[nodiscard]] Seconds bounded_time(const MapReader& r, const std::string& key, double max_seconds,
                     std::string_view what);

[[nodiscard]] Seconds link_latency(const MapReader& r, const std::string& key);

// A buffer or window size in (0, 1 TiB] (zero allowed when allow_zero; the unit parser
// rejects negative ones).
[[nodiscard]] Bytes bounded_size(const MapReader& r, const std::string& key, bool allow_zero);

// bandwidth / latency / efficiency (+ fabric and switch where the group has them).
// latency_required false: an absent `latency` is 0 (node.host_memory, whose crossings add none
// beyond the PCIe hops').
[[nodiscard]] LinkGroupSpec read_group(const MapReader& r, Fabric fabric,
                                       bool latency_required = true);

[[nodiscard]] RoceOptions read_roce(const MapReader& parent, const std::string& key);

// `tcp:` (network: in the template, top level in the explicit form): the Ethernet (TCP)
// model's overrides (tcp_model.hpp; defaults and sources in sim/fabric/README.md).
[[nodiscard]] TcpOptions read_tcp(const MapReader& parent, const std::string& key);

// `routing`, `qps`, `ecmp_seed` (network: in the template, top level in the explicit form).
[[nodiscard]] RoutingOptions read_routing(const MapReader& r);

[[nodiscard]] CostSpec read_cost(const MapReader& parent);

[[nodiscard]] NcclSettings read_nccl(const MapReader& top);

[[nodiscard]] SoftwareModel read_software(const MapReader& r);

// `gpu: h100`: the GPU model (or generation) of every GPU; NCCL's per-architecture tables and
// NVLS depend on it.
[[nodiscard]] std::optional<GpuGeneration> read_gpu(const MapReader& r);

}  // namespace gradsync::config
