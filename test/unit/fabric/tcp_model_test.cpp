// The Ethernet (TCP) model's formulas (tcp_model.hpp) against hand-derived values.
#include <doctest/doctest.h>

#include "gradsync/fabric/tcp_model.hpp"

using namespace gradsync;

TEST_CASE("tcp host cap: 10 GB/s per port by default, or a share of the line rate") {
  TcpOptions tcp;
  CHECK(tcp_host_cap(tcp, BytesPerSecond(12.5e9)).bytes_per_second() == doctest::Approx(10e9));
  tcp.host_efficiency = 0.5;
  CHECK(tcp_host_cap(tcp, BytesPerSecond(4e9)).bytes_per_second() == doctest::Approx(2e9));
}

TEST_CASE("tcp slow start: off by default, on, the rounds before the window covers the BDP") {
  TcpOptions tcp;
  const Seconds rtt(100e-6);
  const BytesPerSecond rate(1.25e9);  // BDP = 125000 B; iw = 14480 B -> k = ceil(log2 8.63) = 4
  CHECK(tcp_slow_start_latency(tcp, Bytes(1e9), rtt, rate).seconds() == 0.0);
  tcp.slow_start = true;
  // Bulk: 4 RTTs minus the 15 x 14480 B sent meanwhile at 1.25 GB/s.
  CHECK(tcp_slow_start_latency(tcp, Bytes(1e9), rtt, rate).seconds() ==
        doctest::Approx(4 * 100e-6 - 15 * 14480 / 1.25e9));
  // 30000 B ends in the 2nd window (14480 + 28960 >= 30000): one RTT minus 14480 B at rate.
  CHECK(tcp_slow_start_latency(tcp, Bytes(30000), rtt, rate).seconds() ==
        doctest::Approx(100e-6 - 14480 / 1.25e9));
  // One window: no extra round trip.
  CHECK(tcp_slow_start_latency(tcp, Bytes(1000), rtt, rate).seconds() == 0.0);
}

TEST_CASE("tcp incast: small blocks that overflow the buffer pay RTO_min once per round") {
  const TcpOptions tcp;  // 384 KiB buffer, 4 MiB send window, RTO_min 200 ms
  const BytesPerSecond c(1.25e9);
  const Seconds rtt(10e-6);
  // 64 x 8 KiB = 512 KiB > 384 KiB + 12.5 KB: collapse. n·S/C + RTO_min.
  CHECK(tcp_incast_round_time(tcp, 64, Bytes(8192), c, rtt).seconds() ==
        doctest::Approx(64 * 8192 / 1.25e9 + 0.2));
  // 16 x 8 KiB fits the buffer: no timeout.
  CHECK(tcp_incast_round_time(tcp, 16, Bytes(8192), c, rtt).seconds() ==
        doctest::Approx(16 * 8192 / 1.25e9));
  // Bulk blocks pay the same one timeout (ns-3: 8 x 8 MiB cold rounds); the send window caps
  // each flow's share of the burst: 8 x 8 MiB = 8 x 4 MiB in the burst.
  CHECK(tcp_incast_round_time(tcp, 8, Bytes(8 << 20), c, rtt).seconds() ==
        doctest::Approx(8.0 * (8 << 20) / 1.25e9 + 0.2));
  CHECK(tcp_burst_bytes(tcp, Bytes(8 << 20)).bytes() == doctest::Approx(4 << 20));
  CHECK(tcp_incast_latency(tcp, true).seconds() == doctest::Approx(0.2));
  CHECK(tcp_incast_latency(tcp, false).seconds() == 0.0);
  // The buffer plus the wire's bytes absorb the burst: 48 x 8 KiB = 384 KiB = the buffer.
  CHECK(!tcp_burst_overflows(tcp, Bytes(48 * 8192), c, rtt));
  CHECK(tcp_burst_overflows(tcp, Bytes(48 * 8192 + 12500 + 1), c, rtt));
  // incast: false removes it.
  TcpOptions off;
  off.incast = false;
  CHECK(tcp_incast_round_time(off, 64, Bytes(8192), c, rtt).seconds() ==
        doctest::Approx(64 * 8192 / 1.25e9));
  // Fewer than incast_flows (5) senders recover by fast retransmit, whatever the burst: 4 x 4
  // MiB overflows the port 40 times over and pays nothing (ns-3); 5 x 4 MiB pays.
  CHECK(tcp_incast_round_time(tcp, 4, Bytes(4 << 20), c, rtt).seconds() ==
        doctest::Approx(4.0 * (4 << 20) / 1.25e9));
  CHECK(tcp_incast_round_time(tcp, 5, Bytes(4 << 20), c, rtt).seconds() ==
        doctest::Approx(5.0 * (4 << 20) / 1.25e9 + 0.2));
}

TEST_CASE("tcp sharing rtt: 2 x route latency + host_rtt + a full switch buffer at the port") {
  TcpOptions tcp;
  CHECK_FALSE(tcp.rtt_bias);
  // 25 GbE port (3.125 GB/s): 384 KiB drains in 125.8 us; 2 x 3 us + 28 us on top.
  CHECK(tcp_sharing_rtt(tcp, Seconds(3e-6), BytesPerSecond(3.125e9)).seconds() ==
        doctest::Approx(6e-6 + 28e-6 + 393216.0 / 3.125e9));
  tcp.host_rtt = Seconds(0.0);
  tcp.switch_buffer = Bytes(0.0);
  CHECK(tcp_sharing_rtt(tcp, Seconds(2e-6), BytesPerSecond(1.25e9)).seconds() ==
        doctest::Approx(4e-6));
}
