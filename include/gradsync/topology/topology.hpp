// A cluster as a graph: devices (GPUs, NVSwitches, PCIe switches, CPUs, NICs, network
// switches) joined by links (fabric, bandwidth, latency, efficiency, duplex). Both YAML forms
// (README.md, Topology files) end up here: the explicit form directly, the cluster template through
// expand_cluster() (cluster_spec.hpp).
//
// The graph is stored as plain vectors (devices_, links_) with stable integer ids; a
// Boost.Graph adjacency_list over the same ids serves the graph algorithms (connectivity,
// shortest paths, max-flow for bisection bandwidth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/tcp_model.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

using DeviceId = std::size_t;
using LinkId = std::size_t;

enum class DeviceKind { Gpu, NvSwitch, PcieSwitch, Cpu, Nic, Switch };
// Efa: AWS Elastic Fabric Adapter (SRD transport: reliable, multipath packet spraying, no PFC;
// NCCL reaches it through the aws-ofi-nccl plugin).
// Memory: a CPU socket's DRAM as GPU traffic without peer-to-peer sees it (NCCL's SHM
// transport writes each byte to host memory and the peer reads it back).
enum class Fabric { NvLink, Pcie, Socket, InfiniBand, Roce, Ethernet, Efa, Memory };
enum class Duplex { Full, Half };
// The collective library whose per-step overheads apply (`software:`, README.md Cluster template).
enum class SoftwareModel { Nccl, None };
// GPU architecture generation (compute capability 7.x, 8.x, 9.x, 10.x+, as NCCL indexes its
// tables; Ada's 8.9 is in the 8.x row): NCCL's per-architecture
// tables (nccl_model.hpp) and NVLS (Hopper or later) depend on it. Topologies name a GPU model
// (`gpu: h100`); gpu_generation_from_string() maps models and generation names to it.
enum class GpuGeneration : std::uint8_t { Volta, Ampere, Hopper, Blackwell };

// Spellings used in YAML and in output ("gpu", "nvswitch", "pcie-switch", "cpu", "nic",
// "switch"; "nvlink", "pcie", "socket", "infiniband", "roce", "ethernet", "efa", "memory").
[[nodiscard]] std::string_view to_string(DeviceKind kind);
[[nodiscard]] std::string_view to_string(Fabric fabric);
[[nodiscard]] std::string_view to_string(SoftwareModel software);
[[nodiscard]] std::optional<DeviceKind> device_kind_from_string(std::string_view text);
[[nodiscard]] std::optional<Fabric> fabric_from_string(std::string_view text);
[[nodiscard]] std::optional<SoftwareModel> software_from_string(std::string_view text);
// Every spelling of each enum, in declaration order (the loaders' choices: they cannot drift
// from the *_from_string tables). fabric_names(true): the network fabrics only.
[[nodiscard]] std::vector<std::string> device_kind_names();
[[nodiscard]] std::vector<std::string> fabric_names(bool network_only = false);
[[nodiscard]] std::vector<std::string> software_names();
// "volta", "ampere", "hopper", "blackwell".
[[nodiscard]] std::string_view to_string(GpuGeneration generation);
// GPU models and generation names, as NCCL's compute-capability rows: v100 and the Turing
// cards t4, rtx2080ti, titan-rtx → Volta (NCCL's sm_7x row); a100, a800, a30, a10, a40, a6000,
// rtx3090 and the Ada cards l4, l40, l40s, rtx4090 → Ampere (sm_8x); h100, h800, h20, h200,
// gh200 → Hopper; b100, b200, gb200, b300, gb300, rtx5090, rtx-pro-6000, gb10 → Blackwell
// (sm_100 and sm_12x share NCCL's >= 10.0 row); the generation names volta, turing, ampere,
// hopper, blackwell. Lower case.
[[nodiscard]] std::optional<GpuGeneration> gpu_generation_from_string(std::string_view text);
// Every spelling gpu_generation_from_string() accepts (for error messages).
[[nodiscard]] const std::vector<std::string>& gpu_model_names();
class Topology;
// The GPUs' generation: the topology's `gpu:` when given, else inferred from the first GPU's
// NVLink bandwidth per direction (NVIDIA's datasheets): >= 900 GB/s Blackwell (NVLink5),
// >= 450 Hopper (NVLink4), >= 300 Ampere (NVLink3), any other NVLink Volta; GPUs without NVLink
// (PCIe cards) count as Hopper, NCCL model's default. Second item: true when inferred.
[[nodiscard]] std::pair<GpuGeneration, bool> gpu_generation_of(const Topology& topology);
// True for the fabrics that connect servers (InfiniBand, RoCE, Ethernet, EFA).
[[nodiscard]] bool is_network_fabric(Fabric fabric);

struct Device {
  std::string name;
  DeviceKind kind = DeviceKind::Gpu;
  int node = -1;            // server index; -1 for devices outside any server (network switches)
  Seconds latency{0.0};     // forwarding latency added to every route crossing this device
  SourceMark origin;        // where it was declared (for error messages)
  // PCIe switches only: whether GPUs under it exchange data peer to peer (the switch turns
  // GPU-to-GPU traffic around). false = no P2P (GeForce cards, ACS on, some virtualized hosts):
  // NCCL copies through host memory, so a route never goes GPU -> switch -> GPU but up to the
  // CPU and back (Router; sim/fabric/README.md, PCIe).
  bool p2p = true;
  // Network switches only: the switch reduces in the network (InfiniBand SHARP, NCCL's CollNet
  // through the SHARP plugin; `network.sharp`, or `sharp:` on an explicit switch). NVLS across
  // servers then runs with SHARP between them (plan_nvls_sharp_allreduce, collective.hpp).
  bool sharp = false;
};

struct Link {
  DeviceId a = 0;
  DeviceId b = 0;
  Fabric fabric = Fabric::Ethernet;
  BytesPerSecond bandwidth{0.0};  // line rate, per direction when full duplex
  Seconds latency{0.0};
  double efficiency = 1.0;        // 0 < e <= 1: share of the line rate that carries payload
  Duplex duplex = Duplex::Full;
  SourceMark origin;
  // The same physical link as link `shares` (an earlier id, the same rate and orientation: `a`
  // is the switch side of both): a PCIe switch without P2P toward its NICs is expanded as two
  // halves, the GPUs' and the NICs', each joined to the CPU by "its" uplink, so that GPU <-> NIC
  // traffic climbs to the CPU and comes back down (cluster_expand.cpp). The platform gives both
  // one SimGrid link, and link loads are counted on `shares`.
  std::optional<LinkId> shares;

  [[nodiscard]] BytesPerSecond effective_bandwidth() const { return bandwidth * efficiency; }
  [[nodiscard]] DeviceId other(DeviceId end) const { return end == a ? b : a; }
};

// RoCE switch features (`network.roce`, README.md Cluster template). The fabric model they drive
// and the sources of the defaults: include/gradsync/roce_model.hpp, sim/fabric/README.md.
struct RoceOptions {
  bool pfc = true;
  bool ecn = true;
  // Buffer one congested switch port may fill before it drops (pfc: false): NVIDIA's default
  // ECN Kmax, 1500 KB (sim/fabric/README.md), is the queue a RoCE port is configured to hold.
  Bytes buffer{1500e3};
  // Go-back-N retransmission timeout after a tail loss (pfc: false): the IB transport's local
  // ACK timeout 4.096 us x 2^NCCL_IB_TIMEOUT, NCCL_IB_TIMEOUT = 20 (NVIDIA/nccl 2.31
  // src/transport/net_ib/connect.cc): 4.29 s.
  Seconds retransmit_timeout{4.096e-6 * 1048576.0};
};

// How switches spread flows over equal-cost paths (sim/fabric/README.md, Routing models).
//   Static   — every flow (every queue pair) keeps one path, chosen by a seeded hash at each
//              branching switch: ECMP on Ethernet/RoCE, static (LID) routing on InfiniBand.
//   Adaptive — switches spread each flow's packets ideally over all equal-cost next hops
//              (InfiniBand adaptive routing): no hash collisions.
enum class Routing { Static, Adaptive };
[[nodiscard]] std::string_view to_string(Routing routing);
[[nodiscard]] std::optional<Routing> routing_from_string(std::string_view text);

// `network.routing`, `network.qps`, `network.ecmp_seed`.
struct RoutingOptions {
  std::optional<Routing> mode;  // unset: the fabric's default (default_routing())
  // Queue pairs per connection, each hashed on its own path (NCCL_IB_QPS_PER_CONNECTION,
  // default 1 in NVIDIA/nccl src/transport/net_ib).
  std::uint32_t qps = 1;
  std::uint64_t seed = 0;  // ECMP hash seed (a different seed = a different set of collisions)
};

// Prices for cost comparisons (`cost:`), in the currency named by `currency`.
// What another network's parts cost (`cost.networks`): what `advise` prices its network
// what-ifs with, instead of the topology's own NIC, switch-port and cable prices.
struct NetworkPrice {
  Fabric fabric = Fabric::Ethernet;
  double gbps = 0.0;  // the NIC line rate it prices
  double nic = 0.0;
  double switch_port = 0.0;
  double cable = 0.0;
};

struct CostSpec {
  std::string currency = "USD";
  double gpu = 0.0;
  double nic = 0.0;
  double switch_port = 0.0;   // per network switch port
  double cable = 0.0;         // per network link
  double node = 0.0;          // per server chassis without GPUs and NICs
  double total_override = 0.0;  // a quoted total; 0 = compute from the parts
  std::vector<NetworkPrice> networks;  // other networks' prices, for what-ifs
};

// One hop-by-hop path between two devices.
struct Route {
  std::vector<DeviceId> devices;  // src ... dst
  std::vector<LinkId> links;      // devices.size() - 1 entries
};

// The job's NCCL settings that change what NCCL runs (topology key `nccl:`, both forms;
// nccl_tuner.hpp applies them): the protocols it may use (NCCL_PROTO) and a tuner plugin's
// rules (as NCCL's example tuner plugin's configuration, or a platform plugin such as
// aws-ofi-nccl's): for an AllReduce of min_bytes..max_bytes bytes, run `algorithm` (and
// `protocol` when given); the first rule that matches and can run wins, else NCCL's own choice.
struct NcclTunerRule {
  double min_bytes = 0.0;    // inclusive
  double max_bytes = 1e300;  // inclusive
  std::string algorithm;     // ring | tree | nvls | nvlstree
  std::string protocol;      // ll | ll128 | simple; empty = NCCL's fastest for the algorithm
  SourceMark origin;
};
struct NcclSettings {
  bool cpu_amd = false;  // nccl.cpu: the host CPU (NCCL's multi-node LL caps, net overhead)
  bool ll = true;
  bool ll128 = true;
  bool simple = true;
  // nccl.algorithms (NCCL_ALGO): the algorithms NCCL's tuner may choose among (ring, tree,
  // nvls, nvlstree, collnetchain, collnetdirect); empty = all. NCCL_NVLS_ENABLE=0 is
  // [ring, tree] (and the CollNet ones where the switch reduces).
  std::vector<std::string> algorithms;
  SourceMark algorithms_origin;
  std::vector<NcclTunerRule> tuner;
  // What `gradsync calibrate` fits to a measured run where NCCL's constants do not hold for
  // this machine (nccl_model.hpp NcclOptions): NCCL's latency table scaled (host, launch and
  // flag-polling speed), each channel's (thread block's) bandwidth cap scaled, and the NVLS
  // per-chunk overhead. Defaults: NCCL 2.30.7's own constants.
  double latency_scale = 1.0;                   // nccl.latency_scale
  double channel_scale = 1.0;                   // nccl.channel_scale
  std::optional<double> nvls_chunk_overhead_s;  // nccl.nvls_chunk_overhead
};

class Topology {
 public:
  Topology() = default;
  explicit Topology(std::string name) : name_(std::move(name)) {}

  DeviceId add_device(Device device);
  LinkId add_link(Link link);
  // Link `id` is the same physical link as `primary` (Link::shares): an earlier link of the same
  // fabric, rate and efficiency.
  void set_link_shares(LinkId id, LinkId primary);

  [[nodiscard]] const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  [[nodiscard]] SoftwareModel software() const { return software_; }
  void set_software(SoftwareModel s) { software_ = s; }
  // The GPUs' generation when the topology names their model (`gpu:`); empty otherwise, and
  // users of it infer one from the NVLink rate (nccl_gpu_generation() in nccl_model.hpp).
  [[nodiscard]] std::optional<GpuGeneration> gpu_generation() const { return gpu_generation_; }
  void set_gpu_generation(std::optional<GpuGeneration> g) { gpu_generation_ = g; }
  // The topology's `gpu:` as written (a model such as "h100", or a generation); "" when absent.
  [[nodiscard]] const std::string& gpu_model() const { return gpu_model_; }
  void set_gpu_model(std::string model) { gpu_model_ = std::move(model); }
  // NVLS's share of a GPU port's effective NVLink bandwidth (node.intra.nvls_efficiency, or
  // `nvls_efficiency:` in the explicit form); empty = the default, kNvlsBandwidthFactor
  // (nccl_model.hpp).
  [[nodiscard]] std::optional<double> nvls_efficiency() const { return nvls_efficiency_; }
  void set_nvls_efficiency(std::optional<double> e) { nvls_efficiency_ = e; }
  [[nodiscard]] const NcclSettings& nccl() const { return nccl_; }
  void set_nccl(NcclSettings n) { nccl_ = std::move(n); }
  [[nodiscard]] const std::optional<CostSpec>& cost() const { return cost_; }
  void set_cost(CostSpec c) { cost_ = std::move(c); }
  [[nodiscard]] const std::optional<RoceOptions>& roce() const { return roce_; }
  void set_roce(RoceOptions r) { roce_ = r; }
  // The Ethernet (TCP) model's options (tcp_model.hpp): set for `network.fabric: ethernet`
  // (defaults unless `network.tcp:`) and by an explicit topology's `tcp:`; empty = no TCP model.
  [[nodiscard]] const std::optional<TcpOptions>& tcp() const { return tcp_; }
  void set_tcp(TcpOptions t) { tcp_ = t; }
  [[nodiscard]] const RoutingOptions& routing() const { return routing_; }
  void set_routing(RoutingOptions r) { routing_ = r; }
  [[nodiscard]] const SourceMark& origin() const { return origin_; }
  void set_origin(SourceMark m) { origin_ = std::move(m); }

  [[nodiscard]] const std::vector<Device>& devices() const { return devices_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] const Device& device(DeviceId id) const { return devices_.at(id); }
  [[nodiscard]] const Link& link(LinkId id) const { return links_.at(id); }
  // Links touching a device, in insertion order.
  [[nodiscard]] const std::vector<LinkId>& links_of(DeviceId id) const { return adjacency_.at(id); }
  [[nodiscard]] std::optional<DeviceId> find_device(std::string_view name) const;

  // GPUs in rank order (declaration order).
  [[nodiscard]] const std::vector<DeviceId>& gpus() const { return gpus_; }
  [[nodiscard]] std::size_t gpu_count() const { return gpus_.size(); }
  // Number of distinct servers the GPUs belong to (GPUs without a node count as one each).
  [[nodiscard]] std::size_t node_count() const;

  // Checks the graph is usable: at least one GPU, no self-loops, positive bandwidths,
  // 0 < efficiency <= 1, non-negative latencies, every GPU reaches every other GPU (GPUs do not
  // forward traffic). Throws ConfigError pointing at the offending declaration.
  void validate() const;

 private:
  std::string name_;
  SoftwareModel software_ = SoftwareModel::Nccl;
  std::optional<GpuGeneration> gpu_generation_;
  std::string gpu_model_;
  std::optional<double> nvls_efficiency_;
  NcclSettings nccl_;
  std::optional<CostSpec> cost_;
  std::optional<RoceOptions> roce_;
  std::optional<TcpOptions> tcp_;
  RoutingOptions routing_;
  SourceMark origin_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<std::vector<LinkId>> adjacency_;
  std::vector<DeviceId> gpus_;
};

// Shortest-path routing with equal-cost multi-path (ECMP) candidates.
//
// Path cost is lexicographic: fewest hops first, then widest links (each link adds
// kHopCost + kWidthScale / bandwidth[GB/s], rounded, so sums stay exact integers). GPUs never
// forward traffic. Routes whose costs tie exactly are ECMP candidates; route() picks one
// hop by hop with a seeded hash, as a switch hashing each flow would.
//
// A PCIe switch with p2p false never passes traffic from a GPU straight to a GPU: since GPUs
// never forward, the one forbidden pattern is [source GPU, that switch, destination GPU], so
// such a route leaves the switch upstream (through host memory) and may come back through
// the same switch from the CPU side.
class Router {
 public:
  explicit Router(const Topology& topology);

  // Every equal-cost shortest path from src to dst, at most `limit` of them (first found).
  [[nodiscard]] std::vector<Route> equal_cost_routes(DeviceId src, DeviceId dst,
                                                     std::size_t limit = 64) const;
  // Number of equal-cost shortest paths (saturates at SIZE_MAX).
  [[nodiscard]] std::size_t equal_cost_count(DeviceId src, DeviceId dst) const;
  // One shortest path; flow_hash selects among ECMP candidates at every branching device.
  [[nodiscard]] Route route(DeviceId src, DeviceId dst, std::uint64_t flow_hash = 0) const;
  // Hop count of the shortest path; throws std::logic_error when dst is unreachable.
  [[nodiscard]] std::size_t hops(DeviceId src, DeviceId dst) const;
  // The links out of `at` that stay on a shortest path toward dst (ECMP candidates at that
  // device), as (link, next device) pairs in link order. `from` is the device the flow came
  // from; it matters only at a PCIe switch without P2P entered from a GPU (then the way on is
  // upstream), so a walk passes it on its first hop after the source.
  [[nodiscard]] std::vector<std::pair<LinkId, DeviceId>> next_hops(
      DeviceId at, DeviceId dst, std::optional<DeviceId> from = std::nullopt) const;

  static constexpr std::uint64_t kHopCost = 1'000'000;
  static constexpr double kWidthScale = 1000.0;

 private:
  [[nodiscard]] std::uint64_t link_cost(LinkId id) const;
  [[nodiscard]] bool may_forward(DeviceId id) const { return forwards_[id] != 0; }

  // Distances are kept for the most recently used destinations only, so memory stays
  // O(kCachedDestinations × devices) however many pairs are routed.
  static constexpr std::size_t kCachedDestinations = 64;
  struct CachedDistances {
    DeviceId dst;
    // Cost-to-dst (UINT64_MAX = unknown or unreachable): exact for settled devices. The search
    // toward dst is bounded and resumed (settle_below): a route from src needs only the devices
    // closer to dst than src, so a ring's neighbours cost a few dozen devices, not the cluster.
    std::vector<std::uint64_t> dist;
    std::vector<std::uint8_t> settled;
    std::vector<std::pair<std::uint64_t, DeviceId>> heap;  // the search's frontier (min-heap)
    std::vector<DeviceId> touched;  // devices whose dist was set, reset when the slot is reused
    // PCIe switches without P2P next to dst (when dst is a GPU), with their cost-to-dst for a
    // flow that entered them from a GPU (upstream only); usually empty.
    std::vector<std::pair<DeviceId, std::uint64_t>> from_gpu;
    std::uint64_t used = 0;  // last use (the least recently used slot is reused)
    // dst's proxy switch (proxy_) is settled without relaxing its links until a query needs a
    // device farther than it (routes from other servers stop there: its thousands of links are
    // relaxed for none of them). kNoDevice when dst has no proxy or it has been expanded.
    DeviceId deferred = std::numeric_limits<DeviceId>::max();
    bool deferred_pending = false;  // popped, links not yet relaxed
    int dst_node = -1;              // dst's server (Device::node)
  };
  // The distances toward dst, exact for every device closer to dst than `from` (and for `from`
  // itself, also when it is a GPU source).
  CachedDistances& distances(DeviceId from, DeviceId dst) const;
  CachedDistances& slot_for(DeviceId dst) const;
  void settle_below(CachedDistances& c, std::uint64_t bound) const;
  void settle(CachedDistances& c, DeviceId v) const;
  void set_distance(CachedDistances& c, DeviceId v, std::uint64_t d) const;

  const Topology* topology_;
  std::vector<std::uint64_t> link_costs_;
  // Stubs: forwarding devices with one forwarding neighbour (a NIC between its GPU and its leaf
  // switch). A shortest path never crosses one in transit, so the search toward a destination
  // does not expand them (16,384 NICs per destination on a 16k-GPU cluster); their distance is
  // their neighbour's plus the link, when a source's first hop needs it.
  std::vector<DeviceId> stub_exit_;  // the one forwarding neighbour, or the device itself
  std::vector<std::uint64_t> stub_cost_;
  std::vector<char> forwards_;  // per device: may_forward()
  // Per forwarding device u, the hops a search toward any destination other than u relaxes
  // from it: its forwarding neighbours that are not stubs, with the link's cost, contiguous
  // (CSR: transit_[transit_offset_[u] .. transit_offset_[u + 1])). Built once; the search then
  // reads no Device or Link (16,384 destinations x the fabric's links on a 16k-GPU cluster).
  struct Transit {
    DeviceId to;
    std::uint64_t cost;
    int node;  // to's server when it is a transit server's device (below), else -1
  };
  std::vector<std::size_t> transit_offset_;
  std::vector<Transit> transit_;
  // Servers whose devices could carry traffic between network devices (a NIC reached from the
  // network leads on to other NICs: PCIe switches and CPUs without peer to peer, PCIe servers).
  // When no such detour is ever as short as the network's own path between its two ends
  // (checked once, no_server_transit()), a search toward dst enters no transit server but
  // dst's: their devices get their distances from a search inside the server, seeded by the
  // network devices around it, when a source there asks (settle_server). Per device: its
  // server if it forwards in such a server, else -1; transit_ lists such devices last, by server
  // (transit_server_offset_[u] is where they start), so a search finds dst's server's few.
  std::vector<int> transit_node_;
  std::vector<std::size_t> transit_server_offset_;
  // Per transit server: its forwarding devices and its border links (device inside, forwarding
  // device outside, cost), in server order (CSR by server index).
  struct Border {
    DeviceId inside;
    DeviceId outside;
    std::uint64_t cost;
    LinkId link;
  };
  std::vector<std::size_t> server_device_offset_;
  std::vector<DeviceId> server_devices_;
  std::vector<std::size_t> server_border_offset_;
  std::vector<Border> server_borders_;
  // Sets transit_node_ (all -1 unless every detour through a server is longer than the
  // network's path between its ends) and the per-server lists above.
  void find_transit_servers();
  [[nodiscard]] bool foreign_transit(const CachedDistances& c, DeviceId v) const {
    return transit_node_[v] >= 0 && transit_node_[v] != c.dst_node;
  }
  // The relaxations of u's transit hops a search toward c.dst makes.
  template <typename Fn>
  void for_each_transit(const CachedDistances& c, DeviceId u, Fn&& fn) const;
  // Settles every forwarding device of transit server `node` toward c.dst (see transit_node_).
  void settle_server(CachedDistances& c, int node) const;
  // Toward a device of a left-out transit server B from outside B (router_entries.cpp): a
  // shortest path enters B once, over one of its border links, and stays inside (a detour
  // through a server is never shortest), so outside B the cost-to-dst is the minimum over B's
  // border switches X of cost-to-X + entry(X). The searches toward X serve every device of
  // every server behind X, instead of one search per destination.
  struct Entries {
    int node = -1;                                          // B
    std::vector<std::pair<DeviceId, std::uint64_t>> via;    // (X, entry(X): border + inside)
    std::vector<std::uint64_t> inside;  // cost-to-dst inside B, per device of B (server order)
    std::vector<CachedDistances*> toward;  // per via: the distances toward X
  };
  // Fills `e` when the route from `src` to `dst` can take that form (false: the full search).
  bool entries_toward(DeviceId src, DeviceId dst, Entries& e) const;
  // dst's cost from `v` inside B (e.inside), or kUnreachable when v is not B's.
  [[nodiscard]] std::uint64_t inside_cost(const Entries& e, DeviceId v, DeviceId dst) const;
  // The next hops from `u` toward dst in link order, for a flow from outside B (GPUs are never
  // among them but dst: B's are cabled inside it, and a GPU on the way in forwards nothing).
  void entry_hops(const Entries& e, DeviceId u, DeviceId dst,
                  std::vector<std::pair<LinkId, DeviceId>>& out) const;
  // route() from src outside B, hop by hop with entry_hops.
  [[nodiscard]] Route entry_route(const Entries& e, DeviceId src, DeviceId dst,
                                  std::uint64_t flow_hash) const;
  mutable Entries entries_;  // scratch for route() and next_hops()
  // Per transit server: no GPU of it is cabled to a device outside it (entries_toward needs it).
  std::vector<char> server_sealed_;
  // Per device of a transit server: its index in server_devices_ (else SIZE_MAX).
  std::vector<std::size_t> server_index_;
  // Every device's links in links_of() order with the neighbour, the cost and whether it is a
  // GPU (CSR: neighbours_[neighbour_offset_[u] .. neighbour_offset_[u + 1])): a route's walk
  // checks each link of a hop without reading Device or Link (a spine has thousands).
  struct Neighbour {
    LinkId link;
    DeviceId to;
    std::uint64_t cost;
    bool gpu;
  };
  std::vector<std::size_t> neighbour_offset_;
  std::vector<Neighbour> neighbours_;
  [[nodiscard]] std::span<const Neighbour> neighbours(DeviceId u) const {
    return {neighbours_.data() + neighbour_offset_[u], neighbours_.data() + neighbour_offset_[u + 1]};
  }
  mutable std::vector<CachedDistances> cache_;  // recent destinations (reserved: never moves)
  mutable std::uint64_t cache_clock_ = 0;
  // Per GPU, the network switch every path from another server enters it through (its NIC's
  // leaf or rail switch), or the GPU itself when there is no single one. Outside its server,
  // cost-to-GPU = cost-to-switch + a constant, so next hops toward the GPU there are the next
  // hops toward the switch: one search serves every GPU behind a switch (proxy_for()).
  std::vector<DeviceId> proxy_;
  // Per GPU with a proxy, its chains' devices next to the proxy (the hops from the proxy
  // toward the GPU go to them): proxy_heads_[proxy_head_offset_[g] .. proxy_head_offset_[g+1]).
  std::vector<std::size_t> proxy_head_offset_;
  std::vector<DeviceId> proxy_heads_;
  // The switch standing in for dst on a hop from `at`, or dst itself.
  [[nodiscard]] DeviceId proxy_for(DeviceId at, DeviceId dst) const;
  // The next hops from dst's proxy toward dst, from its chains' few links (true), or false when
  // `at` is not dst's proxy.
  template <typename Fn>
  bool hops_from_proxy(const CachedDistances& c, DeviceId at, DeviceId dst, Fn&& fn) const;
  // Relaxes the deferred proxy's links when the search must go past it.
  void expand_deferred(CachedDistances& c) const;
  // The smallest key the search would pop next (a deferred proxy counts as its cost + 1).
  [[nodiscard]] std::optional<std::uint64_t> next_key(const CachedDistances& c) const;
};

}  // namespace gradsync
