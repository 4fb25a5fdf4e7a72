// The Ethernet (TCP) fabric model's formulas (tcp_model.hpp; sources in sim/fabric/README.md).
#include "gradsync/fabric/tcp_model.hpp"

#include <algorithm>
#include <cmath>

namespace gradsync {

BytesPerSecond tcp_host_cap(const TcpOptions& tcp, BytesPerSecond line_rate) {
  return tcp.host_efficiency ? line_rate * *tcp.host_efficiency : tcp.host_cap;
}

Seconds tcp_slow_start_latency(const TcpOptions& tcp, Bytes size, Seconds rtt,
                               BytesPerSecond rate) {
  if (!tcp.slow_start || size.bytes() <= 0.0 || rtt.seconds() <= 0.0 ||
      rate.bytes_per_second() <= 0.0)
    return Seconds(0.0);
  const double iw = std::max(1, tcp.initial_window) * tcp.mss.bytes();  // bytes
  const double bdp = (rate * rtt).bytes();
  // Rounds until the window (iw, 2 iw, 4 iw, ...) covers the bandwidth-delay product, and the
  // bytes sent meanwhile: iw (2^k - 1).
  const double k_ss = bdp > iw ? std::ceil(std::log2(bdp / iw)) : 0.0;
  const double sent_in_ss = iw * (std::exp2(k_ss) - 1.0);
  double extra = 0.0;
  if (size.bytes() <= sent_in_ss) {
    // The message ends inside slow start after m windows; the last one streams at `rate`.
    const double m = std::ceil(std::log2(size.bytes() / iw + 1.0));
    const double before_last = iw * (std::exp2(m - 1.0) - 1.0);
    extra = (m - 1.0) * rtt.seconds() - before_last / rate.bytes_per_second();
  } else {
    extra = k_ss * rtt.seconds() - sent_in_ss / rate.bytes_per_second();
  }
  return Seconds(std::max(extra, 0.0));
}

Seconds tcp_sharing_rtt(const TcpOptions& tcp, Seconds route_latency, BytesPerSecond port_rate) {
  const Seconds queue = port_rate.bytes_per_second() > 0.0 ? tcp.switch_buffer / port_rate
                                                           : Seconds(0.0);
  return route_latency * 2.0 + tcp.host_rtt + queue;
}

Bytes tcp_burst_bytes(const TcpOptions& tcp, Bytes size) {
  return std::min(size, tcp.send_window);
}

bool tcp_burst_overflows(const TcpOptions& tcp, Bytes burst, BytesPerSecond rate, Seconds rtt) {
  return burst > tcp.switch_buffer + rate * rtt;
}

Seconds tcp_incast_latency(const TcpOptions& tcp, bool overflowing) {
  return tcp.incast && overflowing ? tcp.rto_min : Seconds(0.0);
}

Seconds tcp_incast_round_time(const TcpOptions& tcp, int senders, Bytes block,
                              BytesPerSecond rate, Seconds rtt) {
  const double n = std::max(senders, 1);
  const Bytes burst = tcp_burst_bytes(tcp, block) * n;
  const Seconds transfer = block * n / rate;
  return transfer + tcp_incast_latency(tcp, senders > 1 && senders >= tcp.incast_flows &&
                                                tcp_burst_overflows(tcp, burst, rate, rtt));
}

}  // namespace gradsync
