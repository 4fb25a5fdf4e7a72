// Packet-level reference for gradsync's Ethernet (TCP) model (V3, sim/fabric/README.md):
// ns-3 3.37 runs the same traffic as a `gradsync bench` command on the same graph, so the flow
// model's completion times can be checked against real TCP (segments, ACKs, drop-tail queues,
// RTOs).
//
//   --pattern=ps    N workers and one dedicated parameter server on one switch: each round,
//                   every worker pushes --bytes to the server at once (N-to-1 incast), and once
//                   all pushes have arrived the server sends --bytes back to every worker
//                   (gradsync bench --algo ps --ps-placement dedicated).
//
//        w0 ──┐
//        w1 ──┼── sw ── server          every link --rate, --delay; switch ports buffer --buffer
//        ...──┘
//
//   --pattern=ring  ring AllReduce of --bytes over 2 x --hosts-per-leaf hosts on a leaf-spine
//                   (2 leaves, 1 spine, uplink = hosts-per-leaf x rate / --oversubscription).
//                   Consecutive ranks alternate leaves, so every ring edge crosses the spine.
//                   2(n-1) steps of bytes/n; rank i sends step s once step s-1 from rank i-1 has
//                   arrived and its own step s-1 has been delivered
//                   (gradsync bench --algo ring --channels 1 --pipeline 1 --fidelity step).
//
//        leaf0 ── spine ── leaf1        ranks 0 2 4 ... on leaf0, 1 3 5 ... on leaf1
//
// Connections are opened before the first round and kept (as NCCL does); --rounds rounds run
// back to back and the program prints one line per round: "round R time_s T". The first round
// includes slow start; gradsync's model (slow_start: false) is the steady state of the others.
// TCP: --tcp (default ns3::TcpCubic, Linux's default), MSS 1448 B (1500 B MTU with timestamps),
// 4 MiB send/receive buffers (Linux tcp_wmem/tcp_rmem maximum), RTO_min 200 ms (Linux),
// delayed ACK every 2 segments. Hosts queue without limit (Linux's TCP small queues keep a
// sender from dropping its own packets); switch ports are drop-tail queues of --buffer bytes.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

namespace {

struct Conn {
  uint32_t src = 0;  // host index
  uint32_t dst = 0;
  Ptr<Socket> tx;
  uint64_t queued = 0;     // bytes the application asked to send
  uint64_t written = 0;    // bytes handed to the socket
  uint64_t delivered = 0;  // bytes received by dst
};

std::vector<Conn> g_conns;
std::vector<Ipv4Address> g_addr;  // per host
std::string g_pattern = "ps";
uint32_t g_rounds = 3;
uint64_t g_bytes = 1 << 20;
uint32_t g_round = 0;
double g_round_start = 0.0;
uint32_t g_done_count = 0;
// ps
uint32_t g_workers = 8;
// ring
uint32_t g_ranks = 0;
uint64_t g_chunk = 0;
std::vector<uint32_t> g_next_step;

void Pump(uint32_t c) {
  Conn& k = g_conns[c];
  while (k.written < k.queued) {
    const uint32_t room = k.tx->GetTxAvailable();
    if (room == 0) return;
    const uint64_t left = k.queued - k.written;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({left, room, 65536}));
    const int sent = k.tx->Send(Create<Packet>(n));
    if (sent <= 0) return;
    k.written += static_cast<uint64_t>(sent);
  }
}

void OnSendSpace(uint32_t c, Ptr<Socket>, uint32_t) { Pump(c); }

void Enqueue(uint32_t c, uint64_t bytes) {
  g_conns[c].queued += bytes;
  Pump(c);
}

void EndRound();

// ---- ps: conns [0, W) push worker -> server, [W, 2W) pull server -> worker -----------------
void StartPsRound() {
  g_round_start = Simulator::Now().GetSeconds();
  g_done_count = 0;
  for (uint32_t w = 0; w < g_workers; ++w) Enqueue(w, g_bytes);
}

void PsDelivered(uint32_t c, uint64_t before) {
  const uint64_t target = g_bytes * (g_round + 1);
  const Conn& k = g_conns[c];
  if (before >= target || k.delivered < target) return;
  if (++g_done_count == g_workers) {
    if (c < g_workers) {  // every push arrived: pull
      g_done_count = 0;
      for (uint32_t w = 0; w < g_workers; ++w) Enqueue(g_workers + w, g_bytes);
    } else {
      EndRound();
    }
  }
}

// ---- ring: conn i = rank i -> rank i+1 ------------------------------------------------------
uint32_t RingSteps() { return 2 * (g_ranks - 1); }

void RingAdvance(uint32_t rank) {
  const uint64_t base = static_cast<uint64_t>(g_round) * RingSteps() * g_chunk;
  const uint32_t pred = (rank + g_ranks - 1) % g_ranks;
  while (g_next_step[rank] < RingSteps()) {
    const uint32_t s = g_next_step[rank];
    if (s > 0) {
      const uint64_t need = base + static_cast<uint64_t>(s) * g_chunk;
      if (g_conns[pred].delivered < need || g_conns[rank].delivered < need) return;
    }
    ++g_next_step[rank];
    Enqueue(rank, g_chunk);
  }
}

void StartRingRound() {
  g_round_start = Simulator::Now().GetSeconds();
  g_done_count = 0;
  g_next_step.assign(g_ranks, 0);
  for (uint32_t r = 0; r < g_ranks; ++r) RingAdvance(r);
}

void RingDelivered(uint32_t c, uint64_t before) {
  const uint64_t target = static_cast<uint64_t>(g_round + 1) * RingSteps() * g_chunk;
  if (before < target && g_conns[c].delivered >= target) {
    if (++g_done_count == g_ranks) {
      EndRound();
      return;
    }
  }
  RingAdvance((c + 1) % g_ranks);
  RingAdvance(c);
}

void StartRound() {
  if (g_pattern == "ps")
    StartPsRound();
  else
    StartRingRound();
}

void EndRound() {
  const double t = Simulator::Now().GetSeconds() - g_round_start;
  std::cout << "round " << g_round << " time_s " << t << std::endl;
  ++g_round;
  if (g_round < g_rounds) Simulator::ScheduleNow(&StartRound);
}

void OnRecv(uint32_t c, Ptr<Socket> socket) {
  Ptr<Packet> p;
  while ((p = socket->Recv())) {
    if (p->GetSize() == 0) break;
    const uint64_t before = g_conns[c].delivered;
    g_conns[c].delivered += p->GetSize();
    if (g_pattern == "ps")
      PsDelivered(c, before);
    else
      RingDelivered(c, before);
  }
}

void OnAccept(uint32_t c, Ptr<Socket> s, const Address&) {
  s->SetRecvCallback(MakeBoundCallback(&OnRecv, c));
}

// One point-to-point link; the switch-side end(s) get a drop-tail queue of `buffer` bytes.
NetDeviceContainer Connect(PointToPointHelper& p2p, Ptr<Node> a, Ptr<Node> b, bool a_is_switch,
                           bool b_is_switch, uint64_t buffer, Ipv4AddressHelper& ip) {
  NetDeviceContainer d = p2p.Install(a, b);
  for (uint32_t i = 0; i < 2; ++i) {
    if (!(i == 0 ? a_is_switch : b_is_switch)) continue;
    DynamicCast<PointToPointNetDevice>(d.Get(i))->GetQueue()->SetMaxSize(
        QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(buffer)));
  }
  ip.Assign(d);
  ip.NewNetwork();
  TrafficControlHelper tch;  // no queue disc: the device queue is the port buffer
  tch.Uninstall(d);
  return d;
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string rate = "10Gbps";
  std::string delay = "1us";
  std::string tcp = "ns3::TcpCubic";
  uint64_t buffer = 393216;  // bytes: gradsync's default switch_buffer (384 KiB)
  uint32_t hosts_per_leaf = 4;
  double oversubscription = 4.0;
  double rto_min_ms = 200.0;

  CommandLine cmd(__FILE__);
  cmd.AddValue("pattern", "ps (incast) or ring (leaf-spine)", g_pattern);
  cmd.AddValue("workers", "ps: workers (one more host is the server)", g_workers);
  cmd.AddValue("hosts-per-leaf", "ring: hosts per leaf (2 leaves)", hosts_per_leaf);
  cmd.AddValue("oversubscription", "ring: leaf downlink : uplink bandwidth", oversubscription);
  cmd.AddValue("bytes", "ps: block per worker; ring: AllReduce size", g_bytes);
  cmd.AddValue("rounds", "rounds run back to back", g_rounds);
  cmd.AddValue("rate", "link rate", rate);
  cmd.AddValue("delay", "link propagation delay", delay);
  cmd.AddValue("buffer", "switch port buffer in bytes", buffer);
  cmd.AddValue("tcp", "TCP congestion control TypeId", tcp);
  cmd.AddValue("rto-min-ms", "TCP minimum RTO in ms", rto_min_ms);
  cmd.Parse(argc, argv);
  if (g_pattern != "ps" && g_pattern != "ring") {
    std::cerr << "tcp_incast_leafspine: --pattern must be ps or ring\n";
    return 2;
  }

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(tcp)));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4u << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4u << 20));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(rto_min_ms)));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));

  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue(rate));
  p2p.SetChannelAttribute("Delay", StringValue(delay));
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000000p"));

  InternetStackHelper stack;
  Ipv4AddressHelper ip("10.0.0.0", "255.255.255.252");
  NodeContainer hosts;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // (src host, dst host) per connection

  if (g_pattern == "ps") {
    hosts.Create(g_workers + 1);
    Ptr<Node> sw = CreateObject<Node>();
    stack.Install(hosts);
    stack.Install(sw);
    for (uint32_t h = 0; h < hosts.GetN(); ++h) {
      NetDeviceContainer d = Connect(p2p, hosts.Get(h), sw, false, true, buffer, ip);
      g_addr.push_back(d.Get(0)->GetNode()->GetObject<Ipv4>()->GetAddress(1, 0).GetLocal());
    }
    for (uint32_t w = 0; w < g_workers; ++w) pairs.emplace_back(w, g_workers);
    for (uint32_t w = 0; w < g_workers; ++w) pairs.emplace_back(g_workers, w);
  } else {
    g_ranks = 2 * hosts_per_leaf;
    g_chunk = g_bytes / g_ranks;
    hosts.Create(g_ranks);
    NodeContainer leaves;
    leaves.Create(2);
    Ptr<Node> spine = CreateObject<Node>();
    stack.Install(hosts);
    stack.Install(leaves);
    stack.Install(spine);
    for (uint32_t r = 0; r < g_ranks; ++r) {
      NetDeviceContainer d = Connect(p2p, hosts.Get(r), leaves.Get(r % 2), false, true, buffer, ip);
      g_addr.push_back(d.Get(0)->GetNode()->GetObject<Ipv4>()->GetAddress(1, 0).GetLocal());
    }
    // Uplink rate = hosts_per_leaf x rate / oversubscription.
    DataRate host_rate(rate);
    const DataRate uplink(static_cast<uint64_t>(static_cast<double>(host_rate.GetBitRate()) *
                                                hosts_per_leaf / oversubscription));
    p2p.SetDeviceAttribute("DataRate", DataRateValue(uplink));
    for (uint32_t l = 0; l < 2; ++l) Connect(p2p, leaves.Get(l), spine, true, true, buffer, ip);
    for (uint32_t r = 0; r < g_ranks; ++r) pairs.emplace_back(r, (r + 1) % g_ranks);
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  const uint16_t base_port = 5000;
  for (uint32_t c = 0; c < pairs.size(); ++c) {
    Conn k;
    k.src = pairs[c].first;
    k.dst = pairs[c].second;
    const uint16_t port = static_cast<uint16_t>(base_port + c);
    Ptr<Socket> listen = Socket::CreateSocket(hosts.Get(k.dst), TcpSocketFactory::GetTypeId());
    listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
    listen->Listen();
    listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                              MakeBoundCallback(&OnAccept, c));
    k.tx = Socket::CreateSocket(hosts.Get(k.src), TcpSocketFactory::GetTypeId());
    k.tx->Bind();
    k.tx->Connect(InetSocketAddress(g_addr[k.dst], port));
    k.tx->SetSendCallback(MakeBoundCallback(&OnSendSpace, c));
    g_conns.push_back(k);
  }
  Simulator::Schedule(MilliSeconds(10), &StartRound);  // after every handshake
  Simulator::Stop(Seconds(600));
  Simulator::Run();
  Simulator::Destroy();
  if (g_round < g_rounds) {
    std::cerr << "tcp_incast_leafspine: only " << g_round << " of " << g_rounds
              << " rounds finished\n";
    return 1;
  }
  return 0;
}
