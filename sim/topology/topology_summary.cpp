// summarize(): the numbers `gradsync topo` reports about a topology.
//
// Counts and per-GPU bandwidths are plain sums over the device/link vectors. The two graph
// questions go to Boost.Graph:
//   - bisection bandwidth is a max-flow (push-relabel) from the first half of the ranks to the
//     second half, on a directed graph in which GPUs cannot forward (see bisection_flow);
//   - the diameter comes from breadth-first searches on a graph whose GPUs have no out-arcs, so
//     hop counts equal Router::hops() (fewest hops first, GPUs never forward) without building
//     n² routes; eccentricity bounds keep it to a few searches on real clusters.
#include "gradsync/topology/topology_summary.hpp"

#include <map>

#include "gradsync/topology/nvlink_rings.hpp"
#include "gradsync/fabric/fabric_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <boost/graph/visitors.hpp>

namespace gradsync {
namespace {

bool is_gpu(const Topology& topology, DeviceId id) {
  return topology.device(id).kind == DeviceKind::Gpu;
}

BytesPerSecond port_bandwidth(const Topology& topology, DeviceId id) {
  BytesPerSecond sum{0.0};
  for (const LinkId l : topology.links_of(id)) sum += topology.link(l).bandwidth;
  return sum;
}

BytesPerSecond min_gpu_port_bandwidth(const Topology& topology) {
  if (topology.gpus().empty()) return BytesPerSecond{0.0};
  BytesPerSecond least{std::numeric_limits<double>::infinity()};
  for (const DeviceId g : topology.gpus()) least = std::min(least, port_bandwidth(topology, g));
  return least;
}

// A server for the per-GPU network share: devices with the same `node`, or a lone GPU with
// node -1 (the explicit form without `node:` attributes), which is its own server.
struct Server {
  std::size_t gpus = 0;
  BytesPerSecond network{0.0};  // line rate of the network links leaving the server
};

// The network links of a server are the links of a network fabric (is_network_fabric) from one
// of its devices (normally a NIC; in the explicit form a GPU may be wired to a switch directly)
// to a device outside it. Single-server topologies have no network: 0.
BytesPerSecond min_gpu_network_bandwidth(const Topology& topology) {
  std::vector<Server> servers;
  std::vector<std::size_t> server_of_node;  // node index -> servers index + 1 (0 = none yet)
  const auto server_index = [&](DeviceId id) -> std::size_t {
    const int node = topology.device(id).node;
    if (node < 0) {
      servers.emplace_back();
      return servers.size() - 1;
    }
    const auto n = static_cast<std::size_t>(node);
    if (n >= server_of_node.size()) server_of_node.resize(n + 1, 0);
    if (server_of_node[n] == 0) {
      servers.emplace_back();
      server_of_node[n] = servers.size();
    }
    return server_of_node[n] - 1;
  };
  const auto in_same_server = [&](DeviceId a, DeviceId b) {
    const int na = topology.device(a).node;
    return na >= 0 && na == topology.device(b).node;
  };

  for (const DeviceId g : topology.gpus()) {
    Server& s = servers[server_index(g)];
    ++s.gpus;
    if (topology.device(g).node < 0) {  // a lone GPU: its own network links
      for (const LinkId l : topology.links_of(g)) {
        const Link& link = topology.link(l);
        if (is_network_fabric(link.fabric)) s.network += link.bandwidth;
      }
    }
  }
  if (servers.size() <= 1) return BytesPerSecond{0.0};

  for (DeviceId d = 0; d < topology.devices().size(); ++d) {
    const Device& device = topology.device(d);
    if (device.node < 0 || device.kind == DeviceKind::Switch) continue;
    const auto n = static_cast<std::size_t>(device.node);
    if (n >= server_of_node.size() || server_of_node[n] == 0) continue;  // a server without GPUs
    Server& s = servers[server_of_node[n] - 1];
    for (const LinkId l : topology.links_of(d)) {
      const Link& link = topology.link(l);
      if (is_network_fabric(link.fabric) && !in_same_server(d, link.other(d))) {
        s.network += link.bandwidth;
      }
    }
  }

  BytesPerSecond least{std::numeric_limits<double>::infinity()};
  for (const Server& s : servers) {
    if (s.gpus > 0) least = std::min(least, s.network / static_cast<double>(s.gpus));
  }
  return least;
}

// --- bisection bandwidth: max-flow -------------------------------------------------------

using FlowValue = std::int64_t;  // bytes per second: exact integers keep push-relabel exact
using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
struct FlowArc {
  FlowValue capacity = 0;
  FlowValue residual = 0;
  FlowTraits::edge_descriptor reverse;
};
using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                        boost::no_property, FlowArc>;

FlowValue to_flow(BytesPerSecond rate) {
  return static_cast<FlowValue>(std::llround(rate.bytes_per_second()));
}

// An arc u->v of capacity c and its residual reverse v->u of capacity 0. (Push-relabel could
// share one opposite pair per link, but Boost's is_flow() check, asserted in debug builds,
// reads zero-capacity arcs as the reverses.)
void add_arc(FlowGraph& g, std::size_t u, std::size_t v, FlowValue capacity) {
  const auto uv = boost::add_edge(u, v, FlowArc{capacity, 0, {}}, g).first;
  const auto vu = boost::add_edge(v, u, FlowArc{0, 0, {}}, g).first;
  g[uv].reverse = vu;
  g[vu].reverse = uv;
}

// Vertices: one per device (same ids), then the super-source and the super-sink.
//
// Capacities: every link gets its line rate in each direction. For full duplex that is the
// hardware. For half duplex the two directions share one line rate; giving each direction the
// full rate is the approximation we make, and it costs nothing here: the bisection is a
// one-direction (single-commodity) flow, in which opposite flows on a link cancel, so a
// max-flow never needs both directions of a link at once.
//
// GPUs do not forward (as in Router). Instead of splitting GPU vertices, arcs are pruned: a GPU
// of the first half has arcs out only (it is a source: the super-source feeds it, its links
// carry its own data away), a GPU of the second half has arcs in only (it is a sink). A flow
// entering a first-half GPU from a link, or leaving a second-half GPU on a link, would be
// transit, and those arcs do not exist; a link between two GPUs of the same half gets no arc.
// The super-source -> GPU (GPU -> super-sink) capacity is the GPU's port bandwidth, which
// bounds what it can send (receive) anyway. With those terminal capacities a transit route
// through a GPU could always be replaced by that GPU's own terminal arc, so allowing transit
// would not raise the value either; the pruning keeps the flow faithful to Router's rule.
FlowValue bisection_flow(const Topology& topology) {
  const auto& ranks = topology.gpus();
  const std::size_t devices = topology.devices().size();
  const std::size_t source = devices;
  const std::size_t sink = devices + 1;
  const std::size_t first_half = ranks.size() / 2;

  enum class Side { None, Source, Sink };
  std::vector<Side> side(devices, Side::None);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    side[ranks[r]] = r < first_half ? Side::Source : Side::Sink;
  }
  // An arc a->b may exist unless it enters a first-half GPU or leaves a second-half GPU.
  const auto arc_allowed = [&](DeviceId a, DeviceId b) {
    return side[a] != Side::Sink && side[b] != Side::Source;
  };

  FlowGraph g(devices + 2);
  for (const Link& link : topology.links()) {
    const FlowValue c = to_flow(link.bandwidth);
    if (arc_allowed(link.a, link.b)) add_arc(g, link.a, link.b, c);
    if (arc_allowed(link.b, link.a)) add_arc(g, link.b, link.a, c);
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const FlowValue port = to_flow(port_bandwidth(topology, ranks[r]));
    if (r < first_half) {
      add_arc(g, source, ranks[r], port);
    } else {
      add_arc(g, ranks[r], sink, port);
    }
  }
  return boost::push_relabel_max_flow(
      g, source, sink,
      boost::capacity_map(boost::get(&FlowArc::capacity, g))
          .residual_capacity_map(boost::get(&FlowArc::residual, g))
          .reverse_edge_map(boost::get(&FlowArc::reverse, g)));
}

// --- diameter: BFS with eccentricity bounds ----------------------------------------------

using HopGraph = boost::compressed_sparse_row_graph<boost::directedS>;
constexpr std::size_t kUnreached = std::numeric_limits<std::size_t>::max();

// Breadth-first searches over the links with GPUs as endpoints only (as in Router, GPUs never
// forward): the graph has the arcs of every link in both directions except those leaving a
// GPU. A search from GPU s starts on s's own links (its neighbours at distance 1); a search
// from any other device starts there. Either way distance(t) is the fewest hops of a route
// whose interior has no GPU, which is what Router::hops() counts (fewest hops first).
class HopSearch {
 public:
  explicit HopSearch(const Topology& topology)
      : topology_(&topology),
        graph_(build(topology)),
        distance_(topology.devices().size(), kUnreached),
        parent_(topology.devices().size()),
        color_(topology.devices().size()) {}

  void from(DeviceId origin) {
    std::fill(distance_.begin(), distance_.end(), kUnreached);  // colours: reset by the BFS
    seeds_.clear();
    if (is_gpu(*topology_, origin)) {
      for (const LinkId l : topology_->links_of(origin)) {
        const DeviceId next = topology_->link(l).other(origin);
        if (distance_[next] == kUnreached) {
          distance_[next] = 1;
          parent_[next] = origin;
          seeds_.push_back(next);
        }
      }
    } else {
      distance_[origin] = 0;
      parent_[origin] = origin;
      seeds_.push_back(origin);
    }
    const auto index = boost::get(boost::vertex_index, graph_);
    boost::breadth_first_search(
        graph_, seeds_.begin(), seeds_.end(), queue_,
        boost::make_bfs_visitor(std::make_pair(
            boost::record_distances(boost::make_iterator_property_map(distance_.begin(), index),
                                    boost::on_tree_edge()),
            boost::record_predecessors(boost::make_iterator_property_map(parent_.begin(), index),
                                       boost::on_tree_edge()))),
        boost::make_iterator_property_map(color_.begin(), index));
  }

  [[nodiscard]] std::size_t distance(DeviceId d) const { return distance_[d]; }
  [[nodiscard]] DeviceId parent(DeviceId d) const { return parent_[d]; }

 private:
  static HopGraph build(const Topology& topology) {
    std::vector<std::pair<std::size_t, std::size_t>> arcs;
    arcs.reserve(2 * topology.links().size());
    for (const Link& link : topology.links()) {
      if (!is_gpu(topology, link.a)) arcs.emplace_back(link.a, link.b);
      if (!is_gpu(topology, link.b)) arcs.emplace_back(link.b, link.a);
    }
    return HopGraph(boost::edges_are_unsorted_multi_pass, arcs.begin(), arcs.end(),
                    topology.devices().size());
  }

  const Topology* topology_;
  HopGraph graph_;
  std::vector<std::size_t> distance_;
  std::vector<std::size_t> parent_;
  std::vector<boost::default_color_type> color_;
  std::vector<std::size_t> seeds_;
  boost::queue<std::size_t> queue_;
};

// The diameter is the largest eccentricity ecc(s) = max_t hops(s, t) over GPUs. One search
// per GPU gives it exactly, in O(GPUs x (V + E)): 7 s for 4096 GPUs in a debug build. Bounds
// make it a handful of searches on real clusters (after Takes & Kosters, "Determining the
// diameter of small world networks", CIKM 2011), while staying exact:
//   - lower bound: the largest eccentricity computed so far;
//   - upper bound per GPU, from a pivot x that is not a GPU and reaches every GPU:
//     ecc(t) <= hops(t, x) + max_u hops(x, u), because a route t..x..u forwards only through
//     x and non-GPU devices (a detour through a GPU would not be a valid bound: GPUs do not
//     forward, so hops between GPUs break the triangle inequality).
// Each round searches the GPU with the largest upper bound (exact eccentricity), then uses
// the middle of its longest route (a spine, a core switch) as a new pivot. The loop ends when
// no upper bound exceeds the lower bound; every GPU is searched at most once, so the worst
// case is the plain algorithm plus as many pivot searches.
std::size_t gpu_diameter(const Topology& topology) {
  const auto& ranks = topology.gpus();
  if (ranks.size() < 2) return 0;
  HopSearch search(topology);
  std::vector<std::size_t> upper(ranks.size(), kUnreached);
  std::vector<bool> pivot_tried(topology.devices().size(), false);
  std::size_t lower = 0;
  for (;;) {
    const auto widest = std::max_element(upper.begin(), upper.end());
    if (*widest <= lower) break;
    const DeviceId s = ranks[static_cast<std::size_t>(widest - upper.begin())];
    search.from(s);
    std::size_t eccentricity = 0;
    DeviceId farthest = s;
    for (const DeviceId t : ranks) {
      // Unreachable pairs cannot occur in a validated topology; they are skipped, not counted.
      const std::size_t d = search.distance(t);
      if (t != s && d != kUnreached && d > eccentricity) {
        eccentricity = d;
        farthest = t;
      }
    }
    *widest = eccentricity;
    lower = std::max(lower, eccentricity);

    DeviceId pivot = farthest;
    for (std::size_t step = 0; step < eccentricity / 2; ++step) pivot = search.parent(pivot);
    if (eccentricity < 2 || is_gpu(topology, pivot) || pivot_tried[pivot]) continue;
    pivot_tried[pivot] = true;
    search.from(pivot);
    std::size_t reach = 0;
    bool reaches_all = true;
    for (const DeviceId u : ranks) {
      reaches_all = reaches_all && search.distance(u) != kUnreached;
      if (reaches_all) reach = std::max(reach, search.distance(u));
    }
    if (!reaches_all) continue;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      upper[r] = std::min(upper[r], search.distance(ranks[r]) + reach);
    }
  }
  return lower;
}

// --- oversubscription --------------------------------------------------------------------

// For every network switch with both host-facing links (to a NIC, or to a GPU wired to the
// switch directly) and switch-facing links: host-facing / switch-facing line rate. The worst
// (largest) ratio is reported; 1 when no switch has both kinds (single switch, no network).
double worst_oversubscription(const Topology& topology) {
  bool found = false;
  double worst = 0.0;
  for (DeviceId d = 0; d < topology.devices().size(); ++d) {
    if (topology.device(d).kind != DeviceKind::Switch) continue;
    BytesPerSecond down{0.0};
    BytesPerSecond up{0.0};
    for (const LinkId l : topology.links_of(d)) {
      const Link& link = topology.link(l);
      const DeviceKind other = topology.device(link.other(d)).kind;
      if (other == DeviceKind::Nic || other == DeviceKind::Gpu) down += link.bandwidth;
      if (other == DeviceKind::Switch) up += link.bandwidth;
    }
    if (down.bytes_per_second() > 0.0 && up.bytes_per_second() > 0.0) {
      worst = found ? std::max(worst, down / up) : down / up;
      found = true;
    }
  }
  return found ? worst : 1.0;
}

}  // namespace

TopologySummary summarize(const Topology& topology) {
  TopologySummary summary;
  summary.name = topology.name();
  summary.gpus = topology.gpu_count();
  summary.nodes = topology.node_count();
  std::tie(summary.gpu_generation, summary.gpu_generation_inferred) = gpu_generation_of(topology);
  summary.gpu_model = topology.gpu_model();
  for (const Device& device : topology.devices()) ++summary.devices[device.kind];
  for (const Link& link : topology.links()) {
    if (link.shares) {  // the same physical link as another: counted once, there
      ++summary.shared_uplinks;
      continue;
    }
    FabricLinks& f = summary.links[link.fabric];
    ++f.count;
    f.total_bandwidth += link.bandwidth;
  }
  summary.gpu_port_bandwidth = min_gpu_port_bandwidth(topology);
  summary.gpu_network_bandwidth = min_gpu_network_bandwidth(topology);
  if (topology.gpu_count() >= 2) {
    summary.bisection_bandwidth =
        BytesPerSecond{static_cast<double>(bisection_flow(topology))};
  }
  summary.oversubscription = worst_oversubscription(topology);
  summary.diameter_hops = gpu_diameter(topology);
  std::map<DeviceId, std::size_t> users;  // GPUs per rail NIC
  for (DeviceId g : topology.gpus()) {
    const std::vector<RailNic> rails = rail_nics(topology, g);
    if (rails.empty()) continue;
    summary.rail_nics_min =
        summary.rail_nics_max == 0 ? rails.size() : std::min(summary.rail_nics_min, rails.size());
    summary.rail_nics_max = std::max(summary.rail_nics_max, rails.size());
    for (const RailNic& r : rails) ++users[r.nic];
  }
  for (const auto& [nic, n] : users) summary.gpus_per_nic_max = std::max(summary.gpus_per_nic_max, n);
  // A server of directly NVLinked GPUs (the first): its peers and how much of it rings use.
  if (!topology.gpus().empty()) {
    std::vector<DeviceId> server;
    for (DeviceId g : topology.gpus())
      if (topology.device(g).node == topology.device(topology.gpus().front()).node) server.push_back(g);
    if (direct_nvlink_mesh(topology, server)) {
      const auto m = direct_nvlink_matrix(topology, server, [](const Link&) { return 1.0; });
      summary.mesh_gpus = server.size();
      summary.mesh_peers_min = server.size();
      for (const auto& row : m) {
        const auto peers = static_cast<std::size_t>(std::count_if(row.begin(), row.end(),
                                                                  [](double v) { return v > 0.0; }));
        summary.mesh_peers_min = std::min(summary.mesh_peers_min, peers);
        summary.mesh_peers_max = std::max(summary.mesh_peers_max, peers);
      }
      summary.mesh_ring_share = server.size() == 2 ? 1.0 : nvlink_ring_share(topology, server);
    }
  }
  for (const Device& d : topology.devices()) summary.sharp_switches += d.sharp ? 1 : 0;
  return summary;
}

}  // namespace gradsync
