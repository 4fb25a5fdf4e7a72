// Which servers a search toward a destination may leave out (see transit_node_ in
// topology.hpp): servers whose devices could carry traffic from one network device to another
// (PCIe switches and a CPU joining the NICs: `node.pcie.p2p: false`, PCIe servers), found once,
// and the check that no such detour is ever a shortest path, so that leaving them out changes
// no distance and no route.
//
// Why: a search toward a GPU settles every device closer than the source. When a server's NICs
// lead on to its other NICs, the NICs are no longer stubs and each rail switch's search relaxes
// all of them and the servers behind (2,048 servers per rail on a 16k-GPU cluster, for every
// destination). Real servers do not route between their NICs, and where the network has its own
// path between the two switches (a spine), the detour NIC -> PCIe -> CPU -> PCIe -> NIC is
// longer anyway; where it is not (no spine, servers cabled to each other), nothing changes.
#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

#include "gradsync/topology/topology.hpp"
#include "route_costs.hpp"

namespace gradsync {

using namespace route_costs;

namespace {

// At most this many distinct network devices around transit servers are checked pairwise (a
// Dijkstra over the network from each); beyond it the searches keep every server.
constexpr std::size_t kMaxCheckedSwitches = 4096;

using Entry = std::pair<std::uint64_t, DeviceId>;
using MinHeap = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;

}  // namespace

void Router::find_transit_servers() {
  const Topology& topology = *topology_;
  const std::size_t n = topology.devices().size();
  transit_node_.assign(n, -1);
  int servers = 0;
  for (const Device& d : topology.devices()) servers = std::max(servers, d.node + 1);
  const auto node_of = [&](DeviceId d) { return topology.device(d).node; };

  // A server carries transit when a forwarding device of it that is not a stub (a dead end for
  // traffic passing by) is cabled to a forwarding device outside it.
  std::vector<char> capable(static_cast<std::size_t>(servers), 0);
  bool any = false;
  for (DeviceId u = 0; u < n; ++u) {
    if (!may_forward(u) || node_of(u) < 0 || stub_exit_[u] != u) continue;
    for (const Neighbour& nb : neighbours(u))
      if (!nb.gpu && node_of(nb.to) != node_of(u)) {
        capable[static_cast<std::size_t>(node_of(u))] = 1;
        any = true;
      }
  }
  if (!any) return;

  // Their forwarding devices and border links; a border to another server's device (a direct
  // cable) or to a network device that hangs off a server (a stub: its distance is the
  // server's) keeps every server in the searches.
  std::vector<std::size_t> device_offset(static_cast<std::size_t>(servers) + 1, 0);
  std::vector<DeviceId> devices;
  std::vector<std::size_t> border_offset(static_cast<std::size_t>(servers) + 1, 0);
  std::vector<Border> borders;
  {
    std::vector<std::vector<DeviceId>> by_server(static_cast<std::size_t>(servers));
    for (DeviceId u = 0; u < n; ++u)
      if (may_forward(u) && node_of(u) >= 0 && capable[static_cast<std::size_t>(node_of(u))])
        by_server[static_cast<std::size_t>(node_of(u))].push_back(u);
    for (std::size_t x = 0; x < by_server.size(); ++x) {
      device_offset[x] = devices.size();
      border_offset[x] = borders.size();
      for (DeviceId u : by_server[x]) {
        devices.push_back(u);
        for (const Neighbour& nb : neighbours(u)) {
          if (nb.gpu || node_of(nb.to) == static_cast<int>(x)) continue;
          if (node_of(nb.to) >= 0 || stub_exit_[nb.to] != nb.to) return;
          borders.push_back(Border{u, nb.to, nb.cost, nb.link});
        }
      }
    }
    device_offset[by_server.size()] = devices.size();
    border_offset[by_server.size()] = borders.size();
  }

  // The network devices around them, and the network's own distances between those.
  std::vector<DeviceId> around;
  for (const Border& b : borders) around.push_back(b.outside);
  std::sort(around.begin(), around.end());
  around.erase(std::unique(around.begin(), around.end()), around.end());
  if (around.size() > kMaxCheckedSwitches) return;
  std::vector<std::size_t> index_of(n, around.size());
  for (std::size_t i = 0; i < around.size(); ++i) index_of[around[i]] = i;
  std::vector<std::uint64_t> between(around.size() * around.size(), kUnreachable);
  std::vector<std::uint64_t> dist(n, kUnreachable);
  std::vector<DeviceId> touched;
  const auto search = [&](DeviceId from, auto&& inside) {  // Dijkstra over inside(v) devices
    for (DeviceId v : touched) dist[v] = kUnreachable;
    touched.clear();
    MinHeap heap;
    dist[from] = 0;
    touched.push_back(from);
    heap.emplace(0, from);
    while (!heap.empty()) {
      const auto [d, u] = heap.top();
      heap.pop();
      if (d != dist[u]) continue;
      for (const Neighbour& nb : neighbours(u)) {
        if (nb.gpu || !inside(nb.to) || d + nb.cost >= dist[nb.to]) continue;
        if (dist[nb.to] == kUnreachable) touched.push_back(nb.to);
        dist[nb.to] = d + nb.cost;
        heap.emplace(dist[nb.to], nb.to);
      }
    }
  };
  for (std::size_t i = 0; i < around.size(); ++i) {
    search(around[i], [&](DeviceId v) { return node_of(v) < 0; });
    for (std::size_t j = 0; j < around.size(); ++j) between[i * around.size() + j] = dist[around[j]];
  }

  // Every detour w1 -> inside server -> w2 must cost more than the network's w1 -> w2.
  for (std::size_t x = 0; x + 1 < border_offset.size(); ++x) {
    for (std::size_t i = border_offset[x]; i < border_offset[x + 1]; ++i) {
      const Border& a = borders[i];
      search(a.inside, [&](DeviceId v) { return node_of(v) == static_cast<int>(x); });
      for (std::size_t j = border_offset[x]; j < border_offset[x + 1]; ++j) {
        const Border& b = borders[j];
        if (b.outside == a.outside || dist[b.inside] == kUnreachable) continue;
        const std::uint64_t detour = a.cost + dist[b.inside] + b.cost;
        if (between[index_of[a.outside] * around.size() + index_of[b.outside]] >= detour) return;
      }
    }
  }

  for (std::size_t x = 0; x + 1 < device_offset.size(); ++x)
    for (std::size_t k = device_offset[x]; k < device_offset[x + 1]; ++k)
      transit_node_[devices[k]] = static_cast<int>(x);
  server_device_offset_ = std::move(device_offset);
  server_devices_ = std::move(devices);
  server_border_offset_ = std::move(border_offset);
  server_borders_ = std::move(borders);
  server_index_.assign(n, std::numeric_limits<std::size_t>::max());
  for (std::size_t k = 0; k < server_devices_.size(); ++k) server_index_[server_devices_[k]] = k;
  // A GPU cabled outside its server (an NVLink domain across servers) is a way into the server
  // that bypasses its border: routes toward such a server keep the full search.
  server_sealed_.assign(static_cast<std::size_t>(servers), 1);
  for (const DeviceId g : topology.gpus())
    if (const int x = node_of(g); x >= 0)
      for (const Neighbour& nb : neighbours(g))
        if (node_of(nb.to) != x) server_sealed_[static_cast<std::size_t>(x)] = 0;
}

}  // namespace gradsync
