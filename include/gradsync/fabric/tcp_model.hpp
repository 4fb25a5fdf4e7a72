// The Ethernet (TCP) fabric model: named corrections on top of max-min sharing for traffic that
// crosses `ethernet` links (sources and measurements in sim/fabric/README.md,
// "Ethernet (TCP) model"). Pure math: the platform layer applies it to SimGrid routes and flows.
//
// 1. Host cap. NCCL over TCP sockets is limited by the host stack (socket threads, copies), not
//    the wire: each host port (the device where a route enters its first ethernet link, and the
//    one where it leaves its last) carries at most `host_cap` per direction, shared by every
//    TCP flow through it. Default: 10 GB/s (80 Gb/s) per port and direction.
// 2. Slow start (off by default: NCCL keeps its sockets open and streams back to back). When
//    on, every message is a fresh connection starting at `initial_window` segments, and pays
//    the round trips the window needs to reach the path's bandwidth-delay product.
// 3. Incast (on by default; `incast: false` turns it off). When `incast_flows` (5) or more flows
//    that start at the same instant converge on one receiving port (the switch port toward the
//    receiver, fed by at least two ingress links) and their synchronized first burst (each
//    flow's block, up to one send window) exceeds the switch buffer plus the port's
//    bandwidth-delay product, the port drops their tails, which only a retransmission timeout
//    recovers: every flow of that burst pays `rto_min` once, whatever its size. Per round,
//    completion = n·S/C + RTO_min (Vasudevan et al., SIGCOMM'09: small blocks collapse, large
//    blocks pay a bounded add-on). Fewer flows recover by fast retransmit (ns-3: 2 to 4
//    senders never time out). The engine charges it with the flows' start latency
//    (sim/engine/simulation.cpp); ns-3's cold rounds agree, its warm rounds mostly do not time
//    out (sim/fabric/README.md).
// 4. RTT-biased sharing (off by default; `rtt_bias: true` turns it on). Loss-based TCP flows
//    that share a bottleneck queue see the same loss rate p, so each gets a rate near
//    MSS / (RTT sqrt(p)) (Mathis, Semke, Mahdavi, Ott, CCR 1997): shares in proportion to
//    1 / RTT. When on, each route through an ethernet link weighs tcp_sharing_rtt() in the
//    max-min solver (platform_builder.hpp): twice its route latency, plus `host_rtt` (both host stacks),
//    plus the standing queue of a full `switch_buffer` at the route's slowest ethernet port,
//    which every flow through that port waits in. Off by default because in a data center the
//    two shared terms dwarf the propagation differences (a same-leaf and a cross-spine route
//    differ by a few microseconds; the queue alone is 126 us at 25 GbE), so the bias between
//    competing gradsync flows is a few percent at most (sim/fabric/README.md).
#pragma once

#include <optional>

#include "gradsync/units/units.hpp"

namespace gradsync {

struct TcpOptions {
  // Host cap per port and direction: host_efficiency x line rate when given, else host_cap.
  // GTC-100GbE-TCP: NCCL over 100 GbE sockets reaches 10 GB/s per NIC (NVIDIA GTC24 S62129);
  // the GCP 32 Gb/s rows with one GPU per VM reach 3.88 GB/s, the line, so the cap is a rate
  // of the host stack, not a share of the line (sim/fabric/README.md).
  BytesPerSecond host_cap{10e9};
  std::optional<double> host_efficiency;
  // Slow start: off because NCCL keeps connections open (see the header comment).
  bool slow_start = false;
  int initial_window = 10;           // segments (RFC 6928, Linux's default since 3.0)
  Bytes mss{1448.0};                 // 1500 B MTU - 20 IP - 20 TCP - 12 timestamps
  // Incast collapse (YAML `incast`, `rto_min`, `switch_buffer`, `send_window`,
  // `incast_flows`).
  bool incast = true;
  Seconds rto_min{0.2};              // Linux TCP_RTO_MIN 200 ms (include/net/tcp.h;
                                     // Vasudevan et al., SIGCOMM'09)
  Bytes switch_buffer{393216.0};     // 384 KiB per port: the even share of a 12 MB shared
                                     // buffer over 32 ports (Broadcom Trident II, Arista 7050X
                                     // datasheet; its dynamic allocation lets one congested
                                     // port take up to 6.7 MB)
  Bytes send_window{4194304.0};      // 4 MiB: Linux net.ipv4.tcp_wmem maximum (ip-sysctl.rst)
  int incast_flows = 5;              // fewest flows converging on the port for the overflow to
                                     // time out: in ns-3 (V3's program, 384 KiB ports) 2, 3
                                     // and 4 senders of 1-16 MiB never did in 45 rounds, 5
                                     // did in 1 of 12, 8 in 3 of 8 (sim/fabric/README.md)
  // RTT-biased sharing (YAML `rtt_bias`, `host_rtt`): off, see the header comment.
  bool rtt_bias = false;
  Seconds host_rtt{28e-6};           // 2 x 14 us: NCCL 2.30.7's per-hop NET latency for Simple
                                     // (src/graph/tuning.cc), each way
};

// The throughput cap of one host port whose ethernet link runs at `line_rate`.
[[nodiscard]] BytesPerSecond tcp_host_cap(const TcpOptions& tcp, BytesPerSecond line_rate);

// Extra latency slow start adds to a message of `size` on a fresh connection whose path has
// round-trip time `rtt` and bottleneck rate `rate`: the rounds the window needs (doubling
// from initial_window x mss) before it covers rate x rtt or the whole message, minus the time
// those bytes would take at `rate` (Cardwell, Savage, Anderson, INFOCOM 2000). Zero when
// slow_start is off. Never negative.
[[nodiscard]] Seconds tcp_slow_start_latency(const TcpOptions& tcp, Bytes size, Seconds rtt,
                                             BytesPerSecond rate);

// The round-trip time that sets a TCP flow's share of a bottleneck under rtt_bias: 2 x
// route_latency (propagation and forwarding, both ways) + host_rtt + switch_buffer / port_rate,
// the queueing delay of a full drop-tail port of rate `port_rate` (the route's slowest ethernet
// link), which loss-based TCP keeps full. Rates of flows sharing a bottleneck go as 1 / this.
[[nodiscard]] Seconds tcp_sharing_rtt(const TcpOptions& tcp, Seconds route_latency,
                                      BytesPerSecond port_rate);

// Bytes one flow of `size` adds to a synchronized burst: its block, up to one send window.
[[nodiscard]] Bytes tcp_burst_bytes(const TcpOptions& tcp, Bytes size);

// True when a burst of `burst` bytes (every flow arriving at one port) overflows the port:
// more than switch_buffer + rate x rtt (what the buffer and the wire hold).
[[nodiscard]] bool tcp_burst_overflows(const TcpOptions& tcp, Bytes burst, BytesPerSecond rate,
                                       Seconds rtt);

// The latency incast adds to a flow that joins an overflowing burst: rto_min, whatever the
// flow's size (ns-3 times out on 8 x 8 MiB and 8 x 32 MiB bursts as on 8 x 2 MiB ones:
// sim/fabric/README.md). Zero when incast is off or the burst does not overflow.
[[nodiscard]] Seconds tcp_incast_latency(const TcpOptions& tcp, bool overflowing);

// Completion time of one incast round (Vasudevan et al., SIGCOMM'09): n blocks of
// `block` into one port of rate `rate`, plus rto_min when the burst overflows (for tests and
// the README's figures).
[[nodiscard]] Seconds tcp_incast_round_time(const TcpOptions& tcp, int senders, Bytes block,
                                            BytesPerSecond rate, Seconds rtt);

}  // namespace gradsync
