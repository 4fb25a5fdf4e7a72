// Cluster template → device/link graph (see the sketch in cluster_spec.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/units/name_table.hpp"

namespace gradsync {

namespace {

// Sanity bounds: beyond these a file is a typo, not a cluster (and would exhaust memory).
constexpr int kMaxNodes = 100'000;
constexpr int kMaxGpusPerNode = 1024;
constexpr int kMaxNicsPerNode = 1024;  // as GPUs per node (a GB200 NVL72 rack: 72 NICs)
constexpr int kMaxSockets = 8;
constexpr long long kMaxGpus = 262'144;
constexpr long long kMaxNics = 524'288;  // network endpoints, all servers together
constexpr int kMaxMeshGpus = 32;         // a full mesh is G(G-1)/2 links per server
constexpr double kMaxOversubscription = 64.0;
constexpr int kMaxRadix = 256;
constexpr int kMaxSpines = 4096;

constexpr std::array<std::pair<NetworkShape, std::string_view>, 5> kShapeNames{{
    {NetworkShape::SingleSwitch, "single-switch"},
    {NetworkShape::LeafSpine, "leaf-spine"},
    {NetworkShape::FatTree, "fat-tree"},
    {NetworkShape::RailOptimized, "rail-optimized"},
    {NetworkShape::Direct, "direct"},
}};

// node.intra.nvlinks leaves some GPU pair without an NVLink.
bool partial_mesh(const NodeSpec& n) {
  for (std::size_t a = 0; a < n.nvlinks.size(); ++a)
    for (std::size_t b = 0; b < n.nvlinks[a].size(); ++b)
      if (a != b && n.nvlinks[a][b] == 0) return true;
  return false;
}

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Smallest even radix k >= 4 whose 3-level fat tree has k^3/4 host ports >= ports.
int fat_tree_radix_for(long long ports) {
  int k = 4;
  while (static_cast<long long>(k) * k * k / 4 < ports) k += 2;
  return k;
}

class ClusterBuilder {
 public:
  explicit ClusterBuilder(const ClusterSpec& spec) : spec_(spec), topo_(spec.name) {}

  Topology build() {
    topo_.set_software(spec_.software);
    topo_.set_gpu_generation(spec_.gpu);
    topo_.set_gpu_model(spec_.gpu_model);
    topo_.set_nccl(spec_.nccl);
    topo_.set_nvls_efficiency(spec_.node.nvls_efficiency);
    topo_.set_origin(spec_.origin);
    if (spec_.cost) topo_.set_cost(*spec_.cost);
    if (spec_.network && spec_.network->roce) topo_.set_roce(*spec_.network->roce);
    if (spec_.network) topo_.set_routing(spec_.network->routing);
    if (spec_.network && spec_.network->fabric == Fabric::Roce && !spec_.network->roce)
      topo_.set_roce(RoceOptions{});
    if (spec_.network && spec_.network->fabric == Fabric::Ethernet)
      topo_.set_tcp(spec_.network->tcp.value_or(TcpOptions{}));
    for (int i = 0; i < spec_.nodes; ++i) build_node(i);
    if (spec_.network) build_network(*spec_.network);
    topo_.validate();
    return std::move(topo_);
  }

 private:
  DeviceId device(std::string name, DeviceKind kind, int node, const SourceMark& origin,
                  Seconds latency = Seconds(0.0)) {
    return topo_.add_device(Device{std::move(name), kind, node, latency, origin});
  }

  void link(DeviceId a, DeviceId b, const LinkGroupSpec& g, Fabric fabric, double share = 1.0) {
    topo_.add_link(Link{a, b, fabric, g.bandwidth * share, g.latency,
                        g.efficiency.value_or(default_efficiency(fabric)), Duplex::Full,
                        g.origin});
  }

  void build_node(int i) {
    const NodeSpec& n = spec_.node;
    const std::string p = fmt::format("n{}.", i);
    std::vector<DeviceId> gpus;
    for (int j = 0; j < n.gpus; ++j)
      gpus.push_back(device(p + fmt::format("gpu{}", j), DeviceKind::Gpu, i, n.origin));
    auto socket_of = [&](int index, int count) {
      return static_cast<int>(static_cast<long long>(index) * n.sockets / count);
    };

    // Attachment points for NICs, filled below.
    std::vector<DeviceId> nic_parent;  // per NIC: the device its PCIe link goes to
    const bool nvlink = n.intra.fabric == Fabric::NvLink;

    if (nvlink) {
      if (n.intra_shape == IntraShape::Switch) {
        const DeviceId sw = device(p + "nvswitch", DeviceKind::NvSwitch, i, n.intra.origin);
        for (DeviceId g : gpus) link(g, sw, n.intra, Fabric::NvLink);
      } else if (n.nvlinks.empty()) {
        const double share = n.gpus > 1 ? 1.0 / (n.gpus - 1) : 1.0;
        for (std::size_t a = 0; a < gpus.size(); ++a)
          for (std::size_t b = a + 1; b < gpus.size(); ++b)
            link(gpus[a], gpus[b], n.intra, Fabric::NvLink, share);
      } else {
        // The wiring given (node.intra.nvlinks): a pair with k links gets k / (the most links
        // of any GPU) of the per-GPU bandwidth.
        int most = 0;
        for (const auto& row : n.nvlinks) {
          int sum = 0;
          for (int k : row) sum += k;
          most = std::max(most, sum);
        }
        for (std::size_t a = 0; a < gpus.size(); ++a)
          for (std::size_t b = a + 1; b < gpus.size(); ++b)
            if (const int k = n.nvlinks[a][b]; k > 0)
              link(gpus[a], gpus[b], n.intra, Fabric::NvLink, static_cast<double>(k) / most);
      }
      // GPU pairs without an NVLink (a partial mesh) talk over PCIe: every GPU, or the PCIe
      // switch it shares with NICs, on its socket's CPU, the CPUs joined by node.socket_link.
      std::vector<DeviceId> cpus;
      const bool nics_via_cpu = !n.nic_p2p && n.nics > 0;
      if (partial_mesh(n) || nics_via_cpu) {
        for (int s = 0; s < n.sockets; ++s)
          cpus.push_back(device(p + fmt::format("cpu{}", s), DeviceKind::Cpu, i, n.origin));
        for (int a = 0; a < n.sockets; ++a)
          for (int b = a + 1; b < n.sockets; ++b)
            link(cpus[static_cast<std::size_t>(a)], cpus[static_cast<std::size_t>(b)],
                 *n.socket_link, Fabric::Socket);
        if (partial_mesh(n) && !nics_via_cpu && (n.nics == 0 || n.nics == n.gpus))
          for (int j = 0; j < n.gpus; ++j)
            link(gpus[static_cast<std::size_t>(j)],
                 cpus[static_cast<std::size_t>(socket_of(j, n.gpus))], *n.pcie, Fabric::Pcie);
      }
      // NICs hang off the GPUs' PCIe side: one per GPU directly, otherwise through PCIe
      // switches shared by neighbouring GPUs and NICs.
      if (n.nics == n.gpus && !nics_via_cpu) {
        nic_parent = gpus;
      } else if (n.nics > 0) {
        // Without P2P between GPUs and NICs (node.pcie.p2p: false: PCIe ACS redirecting it to
        // the root complex, or no GPUDirect RDMA) their traffic climbs the shared switch's
        // uplink to the CPU and comes back down. Each switch is then expanded as two halves,
        // one for its GPUs and one for its NICs, each on the CPU through the same physical
        // uplink (Link::shares): no path turns below the CPU, and the uplink carries every
        // such byte once each way.
        const int switches = std::min(n.gpus, n.nics);
        std::vector<DeviceId> gpu_side, nic_side;
        for (int s = 0; s < switches; ++s) {
          gpu_side.push_back(device(p + fmt::format("pcie{}", s), DeviceKind::PcieSwitch, i,
                                    n.pcie->origin));
          if (cpus.empty()) {
            nic_side.push_back(gpu_side.back());
            continue;
          }
          const DeviceId cpu = cpus[static_cast<std::size_t>(socket_of(s, switches))];
          link(gpu_side.back(), cpu, *n.pcie, Fabric::Pcie);  // the switch's uplink
          if (!nics_via_cpu) {
            nic_side.push_back(gpu_side.back());
            continue;
          }
          const LinkId uplink = topo_.links().size() - 1;
          nic_side.push_back(device(p + fmt::format("pcie{}.nics", s), DeviceKind::PcieSwitch,
                                    i, n.pcie->origin));
          link(nic_side.back(), cpu, *n.pcie, Fabric::Pcie);
          topo_.set_link_shares(topo_.links().size() - 1, uplink);
        }
        for (int j = 0; j < n.gpus; ++j)
          link(gpus[static_cast<std::size_t>(j)],
               gpu_side[static_cast<std::size_t>(static_cast<long long>(j) * switches / n.gpus)],
               *n.pcie, Fabric::Pcie);
        for (int k = 0; k < n.nics; ++k)
          nic_parent.push_back(
              nic_side[static_cast<std::size_t>(static_cast<long long>(k) * switches / n.nics)]);
      }
    } else {
      // PCIe server: GPUs on a PCIe switch per socket, or directly on the CPU root complex.
      // Without P2P on the root complex (node.host_memory) the GPUs hang off a port group
      // that forwards nothing between them, joined to the CPU by the socket's DRAM: every
      // byte a GPU sends is written to host memory (one direction of that link) and read
      // back by its consumer (the other), so each direction carries half the DRAM's rate.
      std::vector<DeviceId> cpus, attach, nic_attach;
      for (int s = 0; s < n.sockets; ++s) {
        cpus.push_back(device(p + fmt::format("cpu{}", s), DeviceKind::Cpu, i, n.origin));
        if (n.intra_shape == IntraShape::Switch || n.host_memory) {
          const bool ports = n.intra_shape != IntraShape::Switch;
          Device pcie_switch{p + (ports ? fmt::format("rootports{}", s) : fmt::format("pcie{}", s)),
                             DeviceKind::PcieSwitch, i, Seconds(0.0), n.intra.origin};
          pcie_switch.p2p = n.pcie_p2p;  // false: GPU-to-GPU traffic turns at the CPU
          const DeviceId sw = topo_.add_device(std::move(pcie_switch));
          if (ports)
            link(sw, cpus.back(), *n.host_memory, Fabric::Memory, 0.5);  // DRAM: write | read
          else
            link(sw, cpus.back(), n.intra, Fabric::Pcie);  // the switch's x16 uplink
          attach.push_back(sw);
          nic_attach.push_back(sw);
          if (!ports && !n.pcie_p2p && n.nics > 0) {
            // Without P2P, GPU <-> NIC traffic turns at the CPU too (no GPUDirect RDMA): the
            // NICs sit on the switch's other half, on the same uplink (as for NVLink servers
            // with node.pcie.p2p: false).
            const LinkId uplink = topo_.links().size() - 1;
            nic_attach.back() = device(p + fmt::format("pcie{}.nics", s), DeviceKind::PcieSwitch,
                                       i, n.intra.origin);
            link(nic_attach.back(), cpus.back(), n.intra, Fabric::Pcie);
            topo_.set_link_shares(topo_.links().size() - 1, uplink);
          }
        } else {
          attach.push_back(cpus.back());
          nic_attach.push_back(cpus.back());
        }
      }
      for (int j = 0; j < n.gpus; ++j)
        link(gpus[static_cast<std::size_t>(j)],
             attach[static_cast<std::size_t>(socket_of(j, n.gpus))], n.intra, Fabric::Pcie);
      // NICs of staged GPUs hang off the CPU: their data is staged in host memory too.
      if (n.host_memory) nic_attach = cpus;
      for (int a = 0; a < n.sockets; ++a)
        for (int b = a + 1; b < n.sockets; ++b)
          link(cpus[static_cast<std::size_t>(a)], cpus[static_cast<std::size_t>(b)],
               *n.socket_link, Fabric::Socket);
      for (int k = 0; k < n.nics; ++k)
        nic_parent.push_back(nic_attach[static_cast<std::size_t>(socket_of(k, n.nics))]);
    }

    for (int k = 0; k < n.nics; ++k) {
      const DeviceId nic = device(p + fmt::format("nic{}", k), DeviceKind::Nic, i,
                                  n.pcie ? n.pcie->origin : n.origin);
      link(nic_parent[static_cast<std::size_t>(k)], nic, *n.pcie, Fabric::Pcie);
      nics_.push_back(nic);
    }
  }

  void net_link(DeviceId a, DeviceId b, const NetworkSpec& net, BytesPerSecond bandwidth) {
    topo_.add_link(Link{a, b, net.fabric, bandwidth, net.link_latency,
                        net.efficiency.value_or(default_efficiency(net.fabric)), Duplex::Full,
                        net.origin});
  }

  DeviceId net_switch(std::string name, const NetworkSpec& net) {
    Device sw{std::move(name), DeviceKind::Switch, -1, net.switch_latency, net.origin};
    sw.sharp = net.sharp;
    return topo_.add_device(std::move(sw));
  }

  void build_network(const NetworkSpec& net) {
    const BytesPerSecond nic_bw = spec_.node.nic_bandwidth;
    const int per_node = spec_.node.nics;
    switch (net.shape) {
      case NetworkShape::SingleSwitch: {
        const DeviceId sw = net_switch("switch", net);
        for (DeviceId nic : nics_) net_link(nic, sw, net, nic_bw);
        break;
      }
      case NetworkShape::LeafSpine: {
        const int hpl = std::min(net.hosts_per_leaf, spec_.nodes);
        const int leaves = ceil_div(spec_.nodes, hpl);
        std::vector<int> leaf_of(nics_.size());
        for (std::size_t k = 0; k < nics_.size(); ++k)
          leaf_of[k] = static_cast<int>(k) / per_node / hpl;
        two_tier(net, leaves, hpl * per_node, leaf_of, [](int l) { return fmt::format("leaf{}", l); });
        break;
      }
      case NetworkShape::RailOptimized: {
        const int hpl = net.hosts_per_leaf > 0 ? std::min(net.hosts_per_leaf, spec_.nodes)
                                               : spec_.nodes;
        const int groups = ceil_div(spec_.nodes, hpl);
        std::vector<int> leaf_of(nics_.size());
        for (std::size_t k = 0; k < nics_.size(); ++k) {
          const int node = static_cast<int>(k) / per_node;
          const int rail = static_cast<int>(k) % per_node;
          leaf_of[k] = rail * groups + node / hpl;
        }
        two_tier(net, per_node * groups, hpl, leaf_of, [groups](int l) {
          return groups == 1 ? fmt::format("rail{}", l)
                             : fmt::format("rail{}.{}", l / groups, l % groups);
        });
        break;
      }
      case NetworkShape::FatTree:
        fat_tree(net);
        break;
      case NetworkShape::Direct:
        // Two servers cabled back to back: NIC k of server 0 to NIC k of server 1 (one server:
        // nothing to cable, as `advise` asks for the one-server reference).
        for (int k = 0; spec_.nodes == 2 && k < per_node; ++k)
          net_link(nics_[static_cast<std::size_t>(k)],
                   nics_[static_cast<std::size_t>(per_node + k)], net, nic_bw);
        break;
    }
  }

  // Leaves with `ports` NIC ports each, joined by spines when there is more than one leaf.
  // Uplink capacity per leaf = downlink capacity / oversubscription, spread evenly.
  template <typename NameFn>
  void two_tier(const NetworkSpec& net, int leaves, int ports, const std::vector<int>& leaf_of,
                NameFn&& leaf_name) {
    const BytesPerSecond nic_bw = spec_.node.nic_bandwidth;
    std::vector<DeviceId> leaf;
    for (int l = 0; l < leaves; ++l) leaf.push_back(net_switch(leaf_name(l), net));
    for (std::size_t k = 0; k < nics_.size(); ++k)
      net_link(nics_[k], leaf[static_cast<std::size_t>(leaf_of[k])], net, nic_bw);
    if (leaves == 1) return;
    const double uplink_ports = ports / net.oversubscription;
    const int spines =
        net.spines > 0 ? net.spines : std::max(1, static_cast<int>(std::lround(uplink_ports)));
    const BytesPerSecond per_link = nic_bw * (uplink_ports / spines);
    std::vector<DeviceId> spine;
    for (int s = 0; s < spines; ++s) spine.push_back(net_switch(fmt::format("spine{}", s), net));
    for (DeviceId l : leaf)
      for (DeviceId s : spine) net_link(l, s, net, per_link);
  }

  // Three-level k-ary fat tree (Al-Fares et al., SIGCOMM'08): k pods of k/2 edge and k/2
  // aggregation switches, (k/2)^2 cores, k^3/4 host ports. Only the pods in use are built.
  void fat_tree(const NetworkSpec& net) {
    const BytesPerSecond nic_bw = spec_.node.nic_bandwidth;
    const long long ports = static_cast<long long>(nics_.size());
    const int k = net.radix > 0 ? net.radix : fat_tree_radix_for(ports);
    const int half = k / 2;
    const int edges_used = ceil_div(ports, half);
    const int pods = ceil_div(edges_used, half);
    const BytesPerSecond up_bw = nic_bw / net.oversubscription;
    std::vector<DeviceId> core;
    for (int c = 0; c < half * half; ++c) core.push_back(net_switch(fmt::format("core{}", c), net));
    std::vector<DeviceId> edge;
    for (int pod = 0; pod < pods; ++pod) {
      std::vector<DeviceId> agg;
      for (int a = 0; a < half; ++a) {
        agg.push_back(net_switch(fmt::format("agg{}.{}", pod, a), net));
        for (int c = 0; c < half; ++c)
          net_link(agg.back(), core[static_cast<std::size_t>(a * half + c)], net, up_bw);
      }
      for (int e = 0; e < half && pod * half + e < edges_used; ++e) {
        edge.push_back(net_switch(fmt::format("edge{}.{}", pod, e), net));
        for (DeviceId a : agg) net_link(edge.back(), a, net, up_bw);
      }
    }
    for (std::size_t p = 0; p < nics_.size(); ++p)
      net_link(nics_[p], edge[p / static_cast<std::size_t>(half)], net, nic_bw);
  }

  const ClusterSpec& spec_;
  Topology topo_;
  std::vector<DeviceId> nics_;  // all NICs, node-major
};

void require(bool ok, const SourceMark& at, const std::string& what) {
  if (!ok) throw ConfigError(at, what);
}

void check_group(const LinkGroupSpec& g, const std::string& key) {
  require(g.bandwidth.bytes_per_second() > 0.0 && std::isfinite(g.bandwidth.bytes_per_second()),
          g.origin, key + ".bandwidth must be positive");
  require(g.latency.seconds() >= 0.0 && std::isfinite(g.latency.seconds()), g.origin,
          key + ".latency must not be negative");
  if (g.efficiency)
    require(*g.efficiency > 0.0 && *g.efficiency <= 1.0, g.origin,
            fmt::format("{}.efficiency must be in (0, 1], got {}", key, *g.efficiency));
}

}  // namespace

std::string_view to_string(NetworkShape shape) { return name_in(kShapeNames, shape); }

std::optional<NetworkShape> network_shape_from_string(std::string_view text) {
  return value_in(kShapeNames, text);
}

std::vector<std::string> network_shape_names() { return names_in(kShapeNames); }

void validate_cluster(const ClusterSpec& spec) {
  const NodeSpec& n = spec.node;
  require(spec.nodes >= 1 && spec.nodes <= kMaxNodes, spec.origin,
          fmt::format("nodes must be between 1 and {}, got {}", kMaxNodes, spec.nodes));
  require(n.gpus >= 1 && n.gpus <= kMaxGpusPerNode, n.origin,
          fmt::format("node.gpus must be between 1 and {}, got {}", kMaxGpusPerNode, n.gpus));
  require(static_cast<long long>(spec.nodes) * n.gpus <= kMaxGpus, spec.origin,
          fmt::format("{} nodes x {} GPUs exceeds the {} GPUs gradsync simulates", spec.nodes,
                      n.gpus, kMaxGpus));
  require(n.nics >= 0 && n.nics <= kMaxNicsPerNode, n.origin,
          fmt::format("node.nics must be between 0 and {}, got {}", kMaxNicsPerNode, n.nics));
  require(static_cast<long long>(spec.nodes) * n.nics <= kMaxNics, n.origin,
          fmt::format("{} nodes x {} NICs exceeds the {} NICs gradsync simulates", spec.nodes,
                      n.nics, kMaxNics));
  require(n.sockets >= 1 && n.sockets <= kMaxSockets, n.origin,
          fmt::format("node.sockets must be between 1 and {}, got {}", kMaxSockets, n.sockets));
  require(n.intra.fabric == Fabric::NvLink || n.intra.fabric == Fabric::Pcie, n.intra.origin,
          "node.intra.fabric must be nvlink or pcie");
  check_group(n.intra, "node.intra");
  if (n.intra.fabric == Fabric::Pcie)
    require(n.intra_shape != IntraShape::Mesh, n.intra.origin,
            "a PCIe server has no direct GPU mesh (use switch: true or false)");
  if (n.intra_shape == IntraShape::Mesh)
    require(n.gpus <= kMaxMeshGpus, n.intra.origin,
            fmt::format("a direct NVLink mesh joins at most {} GPUs, got {}", kMaxMeshGpus,
                        n.gpus));
  if (!n.nvlinks.empty()) {
    require(n.intra_shape == IntraShape::Mesh &&
                n.nvlinks.size() == static_cast<std::size_t>(n.gpus),
            n.intra.origin, "node.intra.nvlinks needs a direct NVLink mesh and one row per GPU");
    require(!partial_mesh(n) || n.pcie.has_value(), n.origin,
            "node.pcie is required when node.intra.nvlinks leaves GPU pairs without NVLink");
  }
  if (n.sockets > 1) {
    require(n.socket_link.has_value(), n.origin,
            "node.socket_link is required when node.sockets > 1 (the CPU-CPU link)");
    check_group(*n.socket_link, "node.socket_link");
  }
  if (n.nics > 0) {
    require(n.nic_bandwidth.bytes_per_second() > 0.0, n.origin,
            "node.nic_bandwidth must be given and positive when node.nics > 0");
    require(n.pcie.has_value(), n.origin,
            "node.pcie is required when node.nics > 0 (the link between GPUs/CPU and NICs)");
    check_group(*n.pcie, "node.pcie");
  }
  if (spec.nodes > 1) {
    require(spec.network.has_value(), spec.origin,
            "a cluster with nodes > 1 needs a network: section");
    require(n.nics >= 1, n.origin, "node.nics must be at least 1 when nodes > 1");
  }
  if (!spec.network) return;
  const NetworkSpec& net = *spec.network;
  require(is_network_fabric(net.fabric), net.origin,
          "network.fabric must be infiniband, roce, ethernet or efa");
  require(n.nics >= 1, n.origin, "a network: section needs node.nics >= 1");
  require(net.oversubscription >= 1.0 && net.oversubscription <= kMaxOversubscription,
          net.origin,
          fmt::format("network.oversubscription must be between 1 and {}, got {}",
                      kMaxOversubscription, net.oversubscription));
  require(net.link_latency.seconds() >= 0.0 && net.switch_latency.seconds() >= 0.0, net.origin,
          "network latencies must not be negative");
  if (net.efficiency)
    require(*net.efficiency > 0.0 && *net.efficiency <= 1.0, net.origin,
            fmt::format("network.efficiency must be in (0, 1], got {}", *net.efficiency));
  require(net.spines >= 0 && net.spines <= kMaxSpines, net.origin,
          fmt::format("network.spines must be between 0 and {}", kMaxSpines));
  require(net.hosts_per_leaf >= 0, net.origin, "network.hosts_per_leaf must not be negative");
  if (net.roce) require(net.fabric == Fabric::Roce, net.origin, "network.roce applies to fabric: roce only");
  if (net.tcp)
    require(net.fabric == Fabric::Ethernet, net.origin, "network.tcp applies to fabric: ethernet only");
  switch (net.shape) {
    case NetworkShape::LeafSpine:
      require(net.hosts_per_leaf >= 1, net.origin,
              "leaf-spine needs network.hosts_per_leaf (servers per leaf switch)");
      break;
    case NetworkShape::FatTree: {
      const long long ports = static_cast<long long>(spec.nodes) * n.nics;
      if (net.radix != 0) {
        require(net.radix >= 4 && net.radix <= kMaxRadix && net.radix % 2 == 0, net.origin,
                fmt::format("network.radix must be an even number between 4 and {}", kMaxRadix));
        const long long capacity = static_cast<long long>(net.radix) * net.radix * net.radix / 4;
        require(capacity >= ports, net.origin,
                fmt::format("a fat tree of radix {} has {} host ports, fewer than the {} NICs",
                            net.radix, capacity, ports));
      } else {
        require(fat_tree_radix_for(ports) <= kMaxRadix, net.origin,
                "too many NICs for a 3-level fat tree of radix <= 256");
      }
      break;
    }
    case NetworkShape::Direct:
      require(spec.nodes <= 2, net.origin,
              fmt::format("shape: direct cables two servers back to back, and nodes is {}",
                          spec.nodes));
      require(!net.sharp, net.origin,
              "network.sharp needs switches to reduce in, and shape: direct has none");
      // NIC k reaches only NIC k: on an NVLink server with several NICs a GPU reaches only
      // its own NIC's peer (GPUs do not forward; NCCL's PXN through a peer GPU is not modelled).
      require(n.intra.fabric != Fabric::NvLink || n.nics == 1, net.origin,
              "shape: direct needs every GPU to reach every NIC of its server: PCIe servers, or "
              "node.nics: 1 on NVLink servers (use single-switch for a NIC per GPU)");
      break;
    case NetworkShape::SingleSwitch:
    case NetworkShape::RailOptimized:
      break;
  }
}

Topology expand_cluster(const ClusterSpec& spec) {
  validate_cluster(spec);
  return ClusterBuilder(spec).build();
}

}  // namespace gradsync
