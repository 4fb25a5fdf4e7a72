// Topology files that are right load into the graph they describe (README.md, Topology
// files): the files under test/data/good (one per form variant), two examples, and every
// file of the shipped library under topologies/. Names, nodes, link counts and efficiencies are
// checked against what the files say, worked out by hand.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/topology/topology.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gradsync;

const fs::path kSourceDir(GRADSYNC_SOURCE_DIR);

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TopologyFile load_good(const std::string& name) {
  return load_topology_file(kSourceDir / "test" / "data" / "good" / (name + ".yaml"));
}

DeviceId id_of(const Topology& t, const std::string& name) {
  const auto id = t.find_device(name);
  REQUIRE_MESSAGE(id.has_value(), "no device named " << name);
  return *id;
}

std::vector<std::string> gpu_names(const Topology& t) {
  std::vector<std::string> names;
  for (DeviceId g : t.gpus()) names.push_back(t.device(g).name);
  return names;
}

// The links touching `name`, as the names of their other ends.
std::vector<std::string> neighbours(const Topology& t, const std::string& name) {
  const DeviceId id = id_of(t, name);
  std::vector<std::string> out;
  for (LinkId l : t.links_of(id)) out.push_back(t.device(t.link(l).other(id)).name);
  return out;
}

std::vector<const Link*> links_between(const Topology& t, const std::string& a,
                                       const std::string& b) {
  const DeviceId x = id_of(t, a);
  const DeviceId y = id_of(t, b);
  std::vector<const Link*> out;
  for (LinkId l : t.links_of(x))
    if (t.link(l).other(x) == y) out.push_back(&t.link(l));
  return out;
}

std::map<Fabric, int> links_per_fabric(const Topology& t) {
  std::map<Fabric, int> count;
  for (const Link& l : t.links()) ++count[l.fabric];
  return count;
}

// A cluster template with every key, `roce:` ("roce only") included under fabric: infiniband.
const char* const kFullTemplate = R"(name: dgx-h100-4node-ib
nodes: 4
node:
  gpus: 8
  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 1us}   # per GPU, per direction
  nics: 8                                   # nics == gpus: rail-optimized
  nic_bandwidth: 400Gbps
  pcie: {bandwidth: 64GB/s, latency: 1us}   # GPU <-> NIC
network:
  fabric: infiniband                        # infiniband | roce | ethernet
  shape: leaf-spine                         # single-switch | leaf-spine | fat-tree | rail-optimized
  hosts_per_leaf: 4
  oversubscription: 1                       # leaf downlink : uplink bandwidth
  link_latency: 500ns
  switch_latency: 300ns
  roce: {pfc: true, ecn: true}              # roce only
)";

// The explicit form: 16 GPUs on one switch, the ideal alpha-beta network.
const char* const kExplicitStar = R"(name: star-16
software: none                              # pure α-β: no library overheads
devices:
  - {name: "gpu[0-15]", kind: gpu}          # ranges expand: gpu0 … gpu15
  - {name: sw0, kind: switch}               # kinds: gpu, nvswitch, pcie-switch, cpu, nic, switch
links:                                      # full-duplex unless duplex: half
  - {between: ["gpu[0-15]", sw0], fabric: infiniband, bandwidth: 25GB/s, latency: 1us, efficiency: 1}
)";

}  // namespace

TEST_CASE("every file in test/data/good loads") {
  const auto files = yaml_files(kSourceDir / "test" / "data" / "good");
  REQUIRE(files.size() >= 8);
  for (const auto& file : files) {
    INFO("file: " << file.filename().string());
    try {
      const TopologyFile f = load_topology_file(file);
      CHECK(f.topology.gpu_count() >= 1);
      CHECK(f.path == file);
      if (f.cluster) {
        CHECK(f.topology.gpu_count() ==
              static_cast<std::size_t>(f.cluster->nodes) * f.cluster->node.gpus);
        CHECK(f.topology.node_count() == static_cast<std::size_t>(f.cluster->nodes));
      }
    } catch (const ConfigError& e) {
      FAIL_CHECK(std::string(e.what()));
    }
  }
}

TEST_CASE("ranges expand in index order, later brackets fastest, with node: $1") {
  const TopologyFile f = load_good("explicit_two_servers");
  const Topology& t = f.topology;
  CHECK_FALSE(f.cluster.has_value());
  CHECK(t.name() == "two-servers-explicit");
  CHECK(t.software() == SoftwareModel::None);
  CHECK(t.devices().size() == 21);
  // Ranks are the GPUs in declaration order.
  CHECK(gpu_names(t) == std::vector<std::string>{"n0.gpu0", "n0.gpu1", "n0.gpu2", "n0.gpu3",
                                                 "n1.gpu0", "n1.gpu1", "n1.gpu2", "n1.gpu3"});
  CHECK(t.node_count() == 2);
  for (int n = 0; n < 2; ++n) {
    for (int g = 0; g < 4; ++g)
      CHECK(t.device(id_of(t, "n" + std::to_string(n) + ".gpu" + std::to_string(g))).node == n);
    CHECK(t.device(id_of(t, "n" + std::to_string(n) + ".nvsw")).node == n);
    CHECK(t.device(id_of(t, "n" + std::to_string(n) + ".nic03")).node == n);
  }
  // Devices without node: belong to no server; per-device latency is kept.
  CHECK(t.device(id_of(t, "leaf0")).node == -1);
  CHECK(t.device(id_of(t, "leaf1")).latency.seconds() == doctest::Approx(300e-9));
  CHECK(t.device(id_of(t, "mgmt")).latency.seconds() == 0.0);
}

TEST_CASE("zero padding is kept: nic[00-03] gives nic00 ... nic03") {
  const Topology t = load_good("explicit_two_servers").topology;
  for (const char* name : {"n0.nic00", "n0.nic01", "n0.nic02", "n0.nic03", "n1.nic00", "n1.nic03"})
    CHECK(t.find_device(name).has_value());
  CHECK_FALSE(t.find_device("n0.nic0").has_value());
  CHECK_FALSE(t.find_device("n0.nic3").has_value());

  // The padding width comes from the lower bound: port[08-11] is port08 ... port11.
  const Topology sparse = load_good("explicit_sparse_ranges").topology;
  for (const char* name : {"port08", "port09", "port10", "port11"})
    CHECK(sparse.find_device(name).has_value());
}

TEST_CASE("comma lists in brackets and a fixed node number") {
  const Topology t = load_good("explicit_sparse_ranges").topology;
  CHECK(gpu_names(t) == std::vector<std::string>{"g0", "g2", "g5", "g6"});
  for (DeviceId g : t.gpus()) CHECK(t.device(g).node == 3);
  CHECK(t.node_count() == 1);
  // Four GPUs against four ports pair up in order.
  CHECK(links_between(t, "g0", "port08").size() == 1);
  CHECK(links_between(t, "g2", "port09").size() == 1);
  CHECK(links_between(t, "g5", "port10").size() == 1);
  CHECK(links_between(t, "g6", "port11").size() == 1);
  CHECK(links_between(t, "g0", "port09").empty());
}

TEST_CASE("a range against one device makes one link per device") {
  const Topology t = load_good("explicit_two_servers").topology;
  for (const std::string server : {"n0", "n1"}) {
    const auto ends = neighbours(t, server + ".nvsw");
    CHECK(ends == std::vector<std::string>{server + ".gpu0", server + ".gpu1", server + ".gpu2",
                                           server + ".gpu3"});
  }
  // "n[0-1].nic[00-01]" against leaf0: four links, one per NIC.
  std::multiset<std::string> on_leaf0;
  for (const auto& n : neighbours(t, "leaf0")) on_leaf0.insert(n);
  CHECK(on_leaf0 == std::multiset<std::string>{"leaf1", "mgmt", "n0.nic00", "n0.nic01",
                                               "n1.nic00", "n1.nic01"});
  // The single device can be written first, too: [n1.nvsw, "n1.gpu[0-3]"].
  CHECK(links_between(t, "n1.gpu2", "n1.nvsw").size() == 1);
  CHECK(t.links().size() == 27);
  CHECK(links_per_fabric(t) ==
        std::map<Fabric, int>{{Fabric::NvLink, 8}, {Fabric::Pcie, 8}, {Fabric::InfiniBand, 9},
                              {Fabric::Ethernet, 2}});
}

TEST_CASE("equal-size ranges pair up element by element") {
  const Topology t = load_good("explicit_two_servers").topology;
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 4; ++g) {
      const std::string gpu = "n" + std::to_string(n) + ".gpu" + std::to_string(g);
      std::vector<std::string> pcie_peers;
      const DeviceId id = id_of(t, gpu);
      for (LinkId l : t.links_of(id))
        if (t.link(l).fabric == Fabric::Pcie)
          pcie_peers.push_back(t.device(t.link(l).other(id)).name);
      const std::string nic = "n" + std::to_string(n) + ".nic0" + std::to_string(g);
      CHECK(pcie_peers == std::vector<std::string>{nic});
    }
}

TEST_CASE("link attributes: bandwidth, latency, duplex, efficiency and its defaults") {
  const Topology t = load_good("explicit_two_servers").topology;
  SUBCASE("a half-duplex link with its own efficiency") {
    const auto mgmt = links_between(t, "mgmt", "leaf1");
    REQUIRE(mgmt.size() == 1);
    CHECK(mgmt[0]->duplex == Duplex::Half);
    CHECK(mgmt[0]->efficiency == doctest::Approx(0.5));
    CHECK(mgmt[0]->fabric == Fabric::Ethernet);
    CHECK(mgmt[0]->bandwidth.bytes_per_second() == doctest::Approx(10e9 / 8));
    CHECK(mgmt[0]->latency.seconds() == doctest::Approx(5e-6));
  }
  SUBCASE("links are full duplex unless told otherwise") {
    for (const Link& l : t.links())
      if (l.fabric != Fabric::Ethernet) CHECK(l.duplex == Duplex::Full);
  }
  SUBCASE("an omitted efficiency is the fabric's default") {
    for (const Link& l : t.links()) {
      if (l.fabric == Fabric::Ethernet) continue;
      INFO(t.device(l.a).name << " <-> " << t.device(l.b).name);
      CHECK(l.efficiency == default_efficiency(l.fabric));
    }
    const auto ib = links_between(t, "n0.nic02", "leaf1");
    REQUIRE(ib.size() == 1);
    CHECK(ib[0]->bandwidth.bytes_per_second() == doctest::Approx(400e9 / 8));
    CHECK(ib[0]->latency.seconds() == doctest::Approx(500e-9));
    const auto nvlink = links_between(t, "n0.gpu1", "n0.nvsw");
    REQUIRE(nvlink.size() == 1);
    CHECK(nvlink[0]->bandwidth.gigabytes_per_second() == doctest::Approx(450.0));
  }
}

TEST_CASE("template: efficiency overrides per group, defaults elsewhere") {
  const TopologyFile f = load_good("template_pcie_two_sockets");
  REQUIRE(f.cluster.has_value());
  CHECK(f.cluster->node.intra.efficiency == 0.7);
  CHECK_FALSE(f.cluster->node.socket_link->efficiency.has_value());
  CHECK_FALSE(f.cluster->node.pcie->efficiency.has_value());
  REQUIRE(f.cluster->network.has_value());
  CHECK(f.cluster->network->efficiency == 0.9);
  const Topology& t = f.topology;
  // Two servers of 4 GPUs, 2 CPUs, 2 NICs, and one switch.
  CHECK(t.gpu_count() == 8);
  CHECK(t.devices().size() == 17);
  CHECK(t.links().size() == 18);
  int gpu_links = 0;
  for (const Link& l : t.links()) {
    const bool gpu_end =
        t.device(l.a).kind == DeviceKind::Gpu || t.device(l.b).kind == DeviceKind::Gpu;
    if (gpu_end) {
      ++gpu_links;
      CHECK(l.efficiency == doctest::Approx(0.7));  // node.intra, overridden
    } else if (l.fabric == Fabric::Socket) {
      CHECK(l.efficiency == default_efficiency(Fabric::Socket));
    } else if (l.fabric == Fabric::Pcie) {
      CHECK(l.efficiency == default_efficiency(Fabric::Pcie));  // node.pcie, default
    } else {
      CHECK(l.fabric == Fabric::Ethernet);
      CHECK(l.efficiency == doctest::Approx(0.9));  // network, overridden
    }
  }
  CHECK(gpu_links == 8);
}

TEST_CASE("template: NVLink mesh, PCIe switches for fewer NICs, RoCE fat tree") {
  const TopologyFile f = load_good("template_mesh_fat_tree_roce");
  const Topology& t = f.topology;
  CHECK(t.gpu_count() == 16);
  CHECK(t.node_count() == 4);
  // A mesh splits each GPU's 300 GB/s over its 3 peers.
  const auto mesh = links_between(t, "n0.gpu0", "n0.gpu3");
  REQUIRE(mesh.size() == 1);
  CHECK(mesh[0]->bandwidth.gigabytes_per_second() == doctest::Approx(100.0));
  CHECK(links_per_fabric(t)[Fabric::NvLink] == 4 * 6);
  REQUIRE(t.roce().has_value());
  CHECK(t.roce()->pfc);
  CHECK_FALSE(t.roce()->ecn);
  // Radix 4: 2 pods in use (4 edges, 4 aggregation switches) and 4 cores.
  int switches = 0;
  for (const Device& d : t.devices()) switches += d.kind == DeviceKind::Switch ? 1 : 0;
  CHECK(switches == 12);
  for (const Link& l : t.links())
    if (is_network_fabric(l.fabric)) CHECK(l.efficiency == default_efficiency(Fabric::Roce));
}

TEST_CASE("template: rail-optimized, software none, cost") {
  const TopologyFile f = load_good("template_rail_optimized");
  const Topology& t = f.topology;
  CHECK(t.software() == SoftwareModel::None);
  REQUIRE(t.cost().has_value());
  CHECK(t.cost()->currency == "EUR");
  CHECK(t.cost()->gpu == 30000.0);
  CHECK(t.gpu_count() == 64);
  // 8 rails x 2 groups of 4 servers = 16 rail switches, plus 2 spines.
  CHECK(t.find_device("rail7.1").has_value());
  CHECK(t.find_device("spine1").has_value());
  CHECK(t.devices().size() == 8 * 17 + 16 + 2);
  // NIC 3 of server 5 sits on rail 3, group 1.
  CHECK(links_between(t, "n5.nic3", "rail3.1").size() == 1);
  for (const Link& l : t.links())
    if (l.fabric == Fabric::Pcie) CHECK(l.efficiency == doctest::Approx(0.8));
}

TEST_CASE("p2p: node.intra.p2p on a PCIe switch server, p2p on an explicit pcie-switch") {
  const TopologyFile def = load_topology_text(R"(nodes: 1
node:
  gpus: 4
  intra: {fabric: pcie, switch: true, bandwidth: 32GB/s, latency: 500ns}
)", "default.yaml");
  CHECK(def.topology.device(id_of(def.topology, "n0.pcie0")).p2p);  // default: peer to peer
  const TopologyFile off = load_topology_text(R"(nodes: 1
node:
  gpus: 4
  intra: {fabric: pcie, switch: true, bandwidth: 32GB/s, latency: 500ns, p2p: false}
)", "off.yaml");
  CHECK_FALSE(off.topology.device(id_of(off.topology, "n0.pcie0")).p2p);
  CHECK_FALSE(off.cluster->node.pcie_p2p);
  CHECK_FALSE(off.topology.find_device("n0.pcie0.nics").has_value());  // no NIC: no NIC half
  // With NICs, they sit on the switch's other half, on the same uplink: no GPUDirect RDMA.
  const TopologyFile nics = load_topology_text(R"(nodes: 1
node:
  gpus: 4
  intra: {fabric: pcie, switch: true, bandwidth: 32GB/s, latency: 500ns, p2p: false}
  nics: 1
  nic_bandwidth: 100Gbps
  pcie: {bandwidth: 16GB/s, latency: 500ns}
)", "nics.yaml");
  const auto up = links_between(nics.topology, "n0.pcie0", "n0.cpu0");
  const auto twin = links_between(nics.topology, "n0.pcie0.nics", "n0.cpu0");
  REQUIRE(up.size() == 1);
  REQUIRE(twin.size() == 1);
  CHECK(&nics.topology.link(twin[0]->shares.value()) == up[0]);
  CHECK(links_between(nics.topology, "n0.pcie0.nics", "n0.nic0").size() == 1);
  CHECK(links_between(nics.topology, "n0.pcie0", "n0.nic0").empty());
  const TopologyFile expl = load_topology_text(R"(devices:
  - {name: "gpu[0-1]", kind: gpu}
  - {name: sw0, kind: pcie-switch, p2p: false}
  - {name: sw1, kind: pcie-switch}
  - {name: cpu, kind: cpu}
links:
  - {between: ["gpu[0-1]", sw0], fabric: pcie, bandwidth: 32GB/s, latency: 500ns}
  - {between: [sw0, cpu], fabric: pcie, bandwidth: 32GB/s, latency: 500ns}
  - {between: [sw1, cpu], fabric: pcie, bandwidth: 32GB/s, latency: 500ns}
)", "explicit.yaml");
  CHECK_FALSE(expl.topology.device(id_of(expl.topology, "sw0")).p2p);
  CHECK(expl.topology.device(id_of(expl.topology, "sw1")).p2p);
}

TEST_CASE("node.pcie.p2p: false splits each GPU/NIC switch in two halves on one uplink") {
  const auto server = [](const char* nics, const char* p2p) {
    return fmt::format(R"(nodes: 2
node:
  gpus: 8
  sockets: 2
  socket_link: {{bandwidth: 64GB/s, latency: 1us}}
  intra: {{fabric: nvlink, switch: true, bandwidth: 300GB/s, latency: 300ns}}
  nics: {}
  nic_bandwidth: 200Gbps
  pcie: {{bandwidth: 32GB/s, latency: 500ns{}}}
network: {{fabric: infiniband, shape: single-switch, link_latency: 1us, switch_latency: 200ns}}
)", nics, p2p);
  };
  const TopologyFile on = load_topology_text(server("2", ""), "on.yaml");
  CHECK(on.cluster->node.nic_p2p);
  CHECK_FALSE(on.topology.find_device("n0.pcie0.nics").has_value());
  const TopologyFile off = load_topology_text(server("2", ", p2p: false"), "off.yaml");
  const Topology& t = off.topology;
  CHECK_FALSE(off.cluster->node.nic_p2p);
  // Per switch: the GPUs' half on the CPU of its socket, the NICs' half on the same CPU through
  // a link that is the same physical uplink (same rate, a = the switch side of both).
  for (int s = 0; s < 2; ++s) {
    const std::string cpu = fmt::format("n0.cpu{}", s);
    const auto up = links_between(t, fmt::format("n0.pcie{}", s), cpu);
    const auto twin = links_between(t, fmt::format("n0.pcie{}.nics", s), cpu);
    REQUIRE(up.size() == 1);
    REQUIRE(twin.size() == 1);
    CHECK_FALSE(up[0]->shares.has_value());
    REQUIRE(twin[0]->shares.has_value());
    CHECK(&t.link(*twin[0]->shares) == up[0]);
    CHECK(t.device(twin[0]->a).name == fmt::format("n0.pcie{}.nics", s));
    CHECK(links_between(t, fmt::format("n0.pcie{}.nics", s), fmt::format("n0.nic{}", s)).size() == 1);
  }
  // GPUs 0-3 on switch 0, 4-7 on switch 1; no GPU has a link to a NIC or to a NIC's half.
  CHECK(links_between(t, "n0.gpu3", "n0.pcie0").size() == 1);
  CHECK(links_between(t, "n0.gpu4", "n0.pcie1").size() == 1);
  CHECK(links_between(t, "n0.gpu0", "n0.pcie0.nics").empty());
  CHECK(links_between(t, "n0.gpu0", "n0.nic0").empty());
  // NCCL binds a GPU's channels to the NIC under its own switch, which no shorter path tells
  // apart from the socket's others: every path climbs to the CPU.
  const auto rails = rail_nics(t, id_of(t, "n0.gpu5"));
  REQUIRE(rails.size() == 1);
  CHECK(t.device(rails[0].nic).name == "n0.nic1");
  CHECK(rails[0].path.devices.size() == 5);  // gpu5, pcie1, cpu1, pcie1.nics, nic1
  // One NIC per GPU: a switch pair per GPU.
  const TopologyFile rail = load_topology_text(server("8", ", p2p: false"), "rail.yaml");
  CHECK(rail.topology.find_device("n1.pcie7.nics").has_value());
  const auto own = rail_nics(rail.topology, id_of(rail.topology, "n1.gpu6"));
  REQUIRE(own.size() == 1);
  CHECK(rail.topology.device(own[0].nic).name == "n1.nic6");
}

TEST_CASE("host_memory: the DRAM of GPUs on the root complex without P2P, and fabric: memory") {
  const TopologyFile t = load_topology_text(R"(nodes: 1
node:
  gpus: 4
  intra: {fabric: pcie, switch: false, bandwidth: 64GB/s, latency: 500ns, p2p: false}
  host_memory: {bandwidth: 307.2GB/s, efficiency: 0.7}
)", "staged.yaml");
  REQUIRE(t.cluster->node.host_memory.has_value());
  const LinkGroupSpec& m = *t.cluster->node.host_memory;
  CHECK(m.fabric == Fabric::Memory);
  CHECK(m.bandwidth.gigabytes_per_second() == doctest::Approx(307.2));
  CHECK(m.latency.seconds() == 0.0);  // no latency: none beyond the PCIe hops
  CHECK(m.efficiency == doctest::Approx(0.7));
  CHECK_FALSE(t.topology.device(id_of(t.topology, "n0.rootports0")).p2p);
  const TopologyFile expl = load_topology_text(R"(devices:
  - {name: "gpu[0-1]", kind: gpu}
  - {name: ports, kind: pcie-switch, p2p: false}
  - {name: cpu, kind: cpu}
links:
  - {between: ["gpu[0-1]", ports], fabric: pcie, bandwidth: 32GB/s, latency: 500ns}
  - {between: [ports, cpu], fabric: memory, bandwidth: 100GB/s, latency: 0ns}
)", "explicit.yaml");
  const auto memory = links_between(expl.topology, "ports", "cpu");
  REQUIRE(memory.size() == 1);
  CHECK(memory[0]->fabric == Fabric::Memory);
  CHECK(memory[0]->efficiency == doctest::Approx(0.75));  // the memory default
  // Nonsense is one error at its position.
  const auto rejects = [](const std::string& host_memory, const std::string& what) {
    CAPTURE(host_memory);
    CHECK_THROWS_WITH_AS((void)load_topology_text(
                             "nodes: 1\nnode:\n  gpus: 4\n  intra: {fabric: pcie, switch: false, "
                             "bandwidth: 64GB/s, latency: 500ns, p2p: false}\n  host_memory: " +
                                 host_memory + "\n",
                             "bad.yaml"),
                         doctest::Contains(what.c_str()), ConfigError);
  };
  rejects("{bandwidth: 0GB/s}", "bad.yaml:5:");
  rejects("{bandwidth: 307.2}", "bad.yaml:5:");
  rejects("{efficiency: 0.7}", "bandwidth");
  rejects("{bandwidth: 307.2GB/s, efficiency: 1.5}", "bad.yaml:5:");
  rejects("{bandwidth: 307.2GB/s, latency: -1ns}", "bad.yaml:5:");
}

TEST_CASE("template: one server needs no network") {
  const TopologyFile f = load_good("template_single_node");
  CHECK(f.topology.gpu_count() == 8);
  CHECK(f.topology.node_count() == 1);
  CHECK_FALSE(f.cluster->network.has_value());
  CHECK(f.topology.name() == "template_single_node");  // no name: the file's stem
}

TEST_CASE("nccl.algorithms: NCCL_ALGO's list, in order, duplicates once, at its key") {
  const TopologyFile f = load_topology_text(
      "nodes: 1\nnode:\n  gpus: 8\n  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 300ns}\n"
      "nccl:\n  algorithms: [tree, ring, tree]\n",
      "algos.yaml");
  CHECK(f.topology.nccl().algorithms == std::vector<std::string>{"tree", "ring"});
  CHECK(f.topology.nccl().algorithms_origin.line == 6);
  const TopologyFile all = load_good("template_single_node");
  CHECK(all.topology.nccl().algorithms.empty());  // absent: NCCL chooses among all
}

TEST_CASE("template example with every key: 32 GPUs on 4 nodes") {
  // The example shows every key, including `roce:` ("roce only") under fabric: infiniband:
  // the block is accepted there and has no effect on an InfiniBand network.
  const TopologyFile f = load_topology_text(kFullTemplate, "template.yaml");
  CHECK_FALSE(f.topology.roce().has_value());
  CHECK(f.topology.name() == "dgx-h100-4node-ib");
  CHECK(f.topology.gpu_count() == 32);
  CHECK(f.topology.node_count() == 4);
  // Rail-optimized NICs: one per GPU, each GPU's own PCIe link.
  CHECK(links_between(f.topology, "n3.gpu7", "n3.nic7").size() == 1);
}

TEST_CASE("explicit example: 16 GPUs on one switch") {
  const TopologyFile f = load_topology_text(kExplicitStar, "star-16.yaml");
  const Topology& t = f.topology;
  CHECK(t.name() == "star-16");
  CHECK(t.software() == SoftwareModel::None);
  CHECK(t.gpu_count() == 16);
  CHECK(t.devices().size() == 17);
  CHECK(t.links().size() == 16);
  CHECK(gpu_names(t).front() == "gpu0");
  CHECK(gpu_names(t).back() == "gpu15");
  for (const Link& l : t.links()) {
    CHECK(l.efficiency == 1.0);
    CHECK(l.duplex == Duplex::Full);
    CHECK(l.bandwidth.gigabytes_per_second() == doctest::Approx(25.0));
    CHECK(l.latency.seconds() == doctest::Approx(1e-6));
  }
  // The same text in a file gives the same graph.
  const TopologyFile from_file = load_good("explicit_star");
  CHECK(from_file.topology.gpu_count() == 16);
  CHECK(from_file.topology.links().size() == 16);
}

TEST_CASE("every topology of the shipped library loads") {
  const auto files = yaml_files(kSourceDir / "topologies");
  if (files.empty()) {
    MESSAGE("topologies/ holds no *.yaml yet");
    return;
  }
  CHECK(files.size() >= 7);
  for (const auto& file : files) {
    INFO("file: " << file.filename().string());
    try {
      const TopologyFile f = load_topology_file(file);
      CHECK(f.topology.gpu_count() >= 1);
      if (f.cluster) {
        CHECK(f.topology.gpu_count() ==
              static_cast<std::size_t>(f.cluster->nodes) * f.cluster->node.gpus);
      }
    } catch (const ConfigError& e) {
      FAIL_CHECK(std::string(e.what()));
    }
  }
}

TEST_CASE("gpu: names the GPU model; without it the generation follows the NVLink rate") {
  const auto generation_of = [](const std::string& text) {
    return gpu_generation_of(load_topology_text(text, "gpu.yaml").topology);
  };
  const std::string node = R"(nodes: 1
node:
  gpus: 4
  intra: {fabric: nvlink, switch: true, bandwidth: RATE, latency: 300ns}
)";
  const auto with_rate = [&](const std::string& rate) {
    std::string t = node;
    t.replace(t.find("RATE"), 4, rate);
    return t;
  };
  // Inferred from NVLink per GPU per direction: V100 150, A100 300, H100 450, B200 900 GB/s.
  CHECK(generation_of(with_rate("150GB/s")) == std::pair{GpuGeneration::Volta, true});
  CHECK(generation_of(with_rate("300GB/s")) == std::pair{GpuGeneration::Ampere, true});
  CHECK(generation_of(with_rate("450GB/s")) == std::pair{GpuGeneration::Hopper, true});
  CHECK(generation_of(with_rate("900GB/s")) == std::pair{GpuGeneration::Blackwell, true});
  // Named: the model wins over the rate, in both forms.
  CHECK(generation_of("gpu: a100\n" + with_rate("450GB/s")) ==
        std::pair{GpuGeneration::Ampere, false});
  CHECK(generation_of("gpu: rtx4090\n" + with_rate("450GB/s")).first == GpuGeneration::Ampere);
  CHECK(generation_of("gpu: gb200\n" + with_rate("450GB/s")).first == GpuGeneration::Blackwell);
  // NCCL's compute-capability rows: Turing (7.5) in the sm_7x row, H20 Hopper, sm_12x Blackwell.
  CHECK(generation_of("gpu: rtx2080ti\n" + with_rate("450GB/s")).first == GpuGeneration::Volta);
  CHECK(generation_of("gpu: turing\n" + with_rate("450GB/s")).first == GpuGeneration::Volta);
  CHECK(generation_of("gpu: h20\n" + with_rate("300GB/s")).first == GpuGeneration::Hopper);
  CHECK(generation_of("gpu: rtx5090\n" + with_rate("300GB/s")).first == GpuGeneration::Blackwell);
  CHECK(generation_of("gpu: gb10\n" + with_rate("300GB/s")).first == GpuGeneration::Blackwell);
  CHECK(generation_of(R"(gpu: v100
devices:
  - {name: "gpu[0-1]", kind: gpu}
  - {name: sw, kind: switch}
links:
  - {between: ["gpu[0-1]", sw], fabric: infiniband, bandwidth: 25GB/s, latency: 1us}
)") == std::pair{GpuGeneration::Volta, false});
  // No NVLink at all (PCIe cards): NCCL model's default row, Hopper.
  CHECK(generation_of(R"(nodes: 1
node:
  gpus: 2
  intra: {fabric: pcie, switch: true, bandwidth: 32GB/s, latency: 500ns}
)") == std::pair{GpuGeneration::Hopper, true});
  for (const std::string& name : gpu_model_names())
    CHECK(gpu_generation_from_string(name).has_value());
  CHECK(to_string(GpuGeneration::Blackwell) == "blackwell");
}

TEST_CASE("nvls_efficiency: node.intra (NVSwitch servers) or top level (explicit form)") {
  const TopologyFile def = load_topology_text(R"(nodes: 1
node:
  gpus: 8
  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 300ns}
)", "default.yaml");
  CHECK_FALSE(def.topology.nvls_efficiency().has_value());
  const TopologyFile set = load_topology_text(R"(nodes: 1
node:
  gpus: 8
  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 300ns, nvls_efficiency: 0.7}
)", "set.yaml");
  CHECK(set.topology.nvls_efficiency() == doctest::Approx(0.7));
  const TopologyFile expl = load_topology_text(R"(nvls_efficiency: 0.65
devices:
  - {name: "gpu[0-1]", kind: gpu}
  - {name: nvs, kind: nvswitch}
links:
  - {between: ["gpu[0-1]", nvs], fabric: nvlink, bandwidth: 450GB/s, latency: 300ns}
)", "explicit.yaml");
  CHECK(expl.topology.nvls_efficiency() == doctest::Approx(0.65));
}

TEST_CASE("template: a rack-scale node with more than 64 NICs (GB200 NVL72: 72)") {
  const std::string rack = R"(nodes: 2
node:
  gpus: 72
  intra: {fabric: nvlink, switch: true, bandwidth: 900GB/s, latency: 300ns}
  nics: NICS
  nic_bandwidth: 400Gbps
  pcie: {bandwidth: 64GB/s, latency: 500ns}
network: {fabric: infiniband, shape: rail-optimized, link_latency: 600ns, switch_latency: 200ns}
)";
  auto with = [&](const char* nics) {
    std::string text = rack;
    text.replace(text.find("NICS"), 4, nics);
    return text;
  };
  const TopologyFile f = load_topology_text(with("72"), "nvl72.yaml");
  std::size_t nics = 0;
  for (const Device& d : f.topology.devices()) nics += d.kind == DeviceKind::Nic ? 1 : 0;
  CHECK(nics == 144);
  CHECK_THROWS_WITH_AS(load_topology_text(with("1025"), "nvl72.yaml"),
                       doctest::Contains("nics"), ConfigError);
}

TEST_CASE("sharp: on an explicit switch, and network.sharp on a template's switches") {
  const TopologyFile e = load_good("explicit_sharp");
  const Device& ib = e.topology.device(*e.topology.find_device("ib"));
  CHECK(ib.sharp);
  CHECK_FALSE(e.topology.device(*e.topology.find_device("n0.nvs")).sharp);
  const std::string tmpl = R"(nodes: 2
node:
  gpus: 8
  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 300ns}
  nics: 8
  nic_bandwidth: 400Gbps
  pcie: {bandwidth: 64GB/s, latency: 500ns}
network: {fabric: infiniband, shape: rail-optimized, link_latency: 600ns, switch_latency: 200ns, sharp: true}
)";
  const TopologyFile t = load_topology_text(tmpl, "sharp.yaml");
  std::size_t sharp = 0, switches = 0;
  for (const Device& d : t.topology.devices()) {
    switches += d.kind == DeviceKind::Switch ? 1 : 0;
    sharp += d.sharp ? 1 : 0;
  }
  CHECK(switches >= 8);  // a rail switch per NIC index, and the spines joining them
  CHECK(sharp == switches);
}

TEST_CASE("template: cost.networks prices other networks for advise's what-ifs") {
  const std::string base = std::string(kFullTemplate) + "cost: {gpu: 30000, nic: 1500, switch_port: 1000, cable: 300,\n"
                                                        "       networks: ";
  const TopologyFile f = load_topology_text(
      base + "[{fabric: ethernet, bandwidth: 100Gbps, nic: 400, switch_port: 250, cable: 60},\n"
             "                  {fabric: roce, bandwidth: 400Gbps, nic: 1100, switch_port: 500, cable: 150}]}\n",
      "priced.yaml");
  REQUIRE(f.topology.cost().has_value());
  const auto& n = f.topology.cost()->networks;
  REQUIRE(n.size() == 2);
  CHECK(n[0].fabric == Fabric::Ethernet);
  CHECK(n[0].gbps == doctest::Approx(100.0));
  CHECK(n[0].nic == 400.0);
  CHECK(n[1].fabric == Fabric::Roce);
  CHECK(n[1].cable == 150.0);
  const auto error = [&](const std::string& networks) -> std::string {
    try {
      (void)load_topology_text(base + networks + "}\n", "priced.yaml");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error("[{fabric: nvlink, bandwidth: 100Gbps, nic: 1, switch_port: 1, cable: 1}]")
            .find("fabric") != std::string::npos);
  CHECK(error("[{fabric: roce, bandwidth: 100Gbps, nic: -1, switch_port: 1, cable: 1}]")
            .find("a price must not be negative") != std::string::npos);
  CHECK(error("[{fabric: roce, bandwidth: 100Gbps, nic: 1, switch_port: 1}]").find("cable") !=
        std::string::npos);
  CHECK(error("[{fabric: roce, bandwidth: 100Gbps, nic: 1, switch_port: 1, cable: 1},"
              " {fabric: roce, bandwidth: 100Gbps, nic: 2, switch_port: 2, cable: 2}]")
            .find("priced twice") != std::string::npos);
}

TEST_CASE("node.intra.nvlinks: a matrix of NVLinks per GPU pair, pairs without one on PCIe") {
  const TopologyFile t = load_topology_text(R"(nodes: 1
node:
  gpus: 3
  intra:
    fabric: nvlink
    switch: false
    bandwidth: 150GB/s
    latency: 600ns
    nvlinks:              # GPU 0-1: 2 links, 1-2: 4, 0-2: none
      - [0, 2, 0]
      - [2, 0, 4]
      - [0, 4, 0]
  pcie: {bandwidth: 16GB/s, latency: 500ns}
)", "mesh.yaml");
  REQUIRE(t.cluster.has_value());
  CHECK(t.cluster->node.nvlinks == std::vector<std::vector<int>>{{0, 2, 0}, {2, 0, 4}, {0, 4, 0}});
  // A link carries bandwidth / (the most links of a GPU: GPU 1's 6) = 25 GB/s.
  const auto pair01 = links_between(t.topology, "n0.gpu0", "n0.gpu1");
  REQUIRE(pair01.size() == 1);
  CHECK(pair01[0]->bandwidth.gigabytes_per_second() == doctest::Approx(50.0));
  const auto pair12 = links_between(t.topology, "n0.gpu1", "n0.gpu2");
  REQUIRE(pair12.size() == 1);
  CHECK(pair12[0]->bandwidth.gigabytes_per_second() == doctest::Approx(100.0));
  CHECK(links_between(t.topology, "n0.gpu0", "n0.gpu2").empty());
  CHECK(links_between(t.topology, "n0.gpu0", "n0.cpu0").size() == 1);  // the PCIe way round
  // A full matrix needs no PCIe.
  const TopologyFile full = load_topology_text(
      "nodes: 1\nnode:\n  gpus: 2\n  intra: {fabric: nvlink, switch: false, bandwidth: 50GB/s, "
      "latency: 600ns, nvlinks: [[0, 2], [2, 0]]}\n",
      "pair.yaml");
  CHECK(full.topology.gpu_count() == 2);
  CHECK_THROWS_WITH_AS((void)load_topology_text(
                           "nodes: 1\nnode:\n  gpus: 2\n  intra: {fabric: nvlink, switch: false, "
                           "bandwidth: 50GB/s, latency: 600ns, nvlinks: [[0, 0], [0, 0]]}\n",
                           "none.yaml"),
                       doctest::Contains("has no NVLink at all"), ConfigError);
  CHECK_THROWS_WITH_AS((void)load_topology_text(
                           "nodes: 1\nnode:\n  gpus: 2\n  intra: {fabric: nvlink, switch: false, "
                           "bandwidth: 50GB/s, latency: 600ns, nvlinks: [[0, 19], [19, 0]]}\n",
                           "many.yaml"),
                       doctest::Contains("many.yaml:4:"), ConfigError);
}
