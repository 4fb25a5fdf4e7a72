#!/usr/bin/env python3
"""Ethernet (TCP) incast through `gradsync bench` (tcp_model.hpp, sim/fabric/README.md), on
test/data/tcp/ns3_incast_star.yaml: 8 workers and a dedicated parameter server on one switch,
10 Gb/s ports at efficiency 0.964 (C = 1.205 GB/s), `--algo ps --ps-placement dedicated`.
Each round is a push (8-to-1 incast into the server's port) then a pull (1-to-8: every worker's
port receives one flow), so the closed form is

    time = 2 n S / C + 2 route latencies + RTO_min   when the push's burst n·min(S, send_window) overflows
                                 switch_buffer + C·RTT, else without RTO_min

(incast, Vasudevan et al., SIGCOMM'09: per round n·S/(n·S/C + RTO_min)). Checked within 2 %:
  - small blocks (256 KiB) pay exactly one RTO_min (0.2035 s against 3.5 ms without);
  - bulk blocks (32 MiB, above the 4 MiB send window) pay the same single RTO_min, a bounded
    add-on: the push's goodput n·S/(n·S/C + RTO_min) rises toward C with S;
  - the threshold: 8 x 48 KiB = the 384 KiB buffer does not overflow, 8 x 49 KiB does;
  - the keys: incast: false removes the timeout; rto_min: 10ms charges 10 ms; a 4 MiB
    switch_buffer absorbs 8 x 256 KiB; a 32 KiB send_window keeps the burst at 256 KiB;
    incast_flows: 9 spares the 8 flows, incast_flows: 8 does not;
  - a ring on the same star (every port receives one flow) pays nothing;
  - InfiniBand with the same shape pays nothing (and equals Ethernet with incast: false).

Usage: GRADSYNC=/path/to/gradsync tcp_incast_bench_test.py TOPOLOGY_YAML
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

N = 8                          # workers
C = 10e9 / 8 * 0.964           # B/s: the star's port rate x efficiency (from the YAML)
RTO_MIN = 0.2                  # s, the default rto_min (tcp_model.hpp)
LATENCY = 2 * 2e-6             # s: push and pull each wait one route latency (gpu-sw-gpu, 2 us)
KIB, MIB = 1024, 1024 * 1024


def bench(text, size, *args):
    rows = cli.bench_text(text, "--op", "allreduce", *args, "--min", "%dB" % size,
                          "--max", "%dB" % size)
    return rows[0]["time_us"] * 1e-6


def ps(text, size):
    return bench(text, size, "--algo", "ps", "--ps-placement", "dedicated")


def with_tcp(text, line):
    assert text.count("\ntcp:\n") == 1
    return text.replace("\ntcp:\n", "\ntcp:\n  %s\n" % line)


check = cli.Checks()


def near(got, want, rel=0.02):
    return abs(got - want) <= rel * want


def main():
    text = open(sys.argv[1]).read()
    ok = True
    for size, timeout in ((256 * KIB, True), (32 * MIB, True), (48 * KIB, False),
                          (49 * KIB, True)):
        want = 2 * N * size / C + LATENCY + (RTO_MIN if timeout else 0.0)
        got = ps(text, size)
        ok &= check(near(got, want), "ps %d KiB: %.5f s vs 2nS/C%s = %.5f s"
                    % (size // KIB, got, " + RTO_min" if timeout else "", want))
    push = N * 32 * MIB
    print("     32 MiB push goodput n·S/(n·S/C + RTO_min) = %.3f of C (bounded add-on)"
          % (push / (push / C + RTO_MIN) / C))
    size = 256 * KIB
    bulk = 2 * N * size / C + LATENCY
    off = ps(with_tcp(text, "incast: false"), size)
    ok &= check(near(off, bulk), "incast: false: %.5f s vs 2nS/C = %.5f s" % (off, bulk))
    got = ps(with_tcp(text, "rto_min: 10ms"), size)
    ok &= check(near(got, bulk + 0.01), "rto_min: 10ms: %.5f s vs %.5f s" % (got, bulk + 0.01))
    got = ps(with_tcp(text, "switch_buffer: 4MiB"), size)
    ok &= check(near(got, bulk), "switch_buffer: 4MiB absorbs 8 x 256 KiB: %.5f s vs %.5f s"
                % (got, bulk))
    got = ps(with_tcp(text, "incast_flows: 9"), size)
    ok &= check(near(got, bulk), "incast_flows: 9, 8 flows recover by fast retransmit: %.5f s vs "
                "%.5f s" % (got, bulk))
    got = ps(with_tcp(text, "incast_flows: 8"), size)
    ok &= check(near(got, bulk + RTO_MIN), "incast_flows: 8, 8 flows time out: %.5f s vs %.5f s"
                % (got, bulk + RTO_MIN))
    got = ps(with_tcp(text, "send_window: 32KiB"), size)
    ok &= check(near(got, bulk), "send_window: 32KiB, burst 256 KiB fits: %.5f s vs %.5f s"
                % (got, bulk))
    ring = bench(text, 32 * MIB, "--algo", "ring", "--channels", "1")
    ring_off = bench(with_tcp(text, "incast: false"), 32 * MIB, "--algo", "ring", "--channels", "1")
    ok &= check(abs(ring - ring_off) <= 1e-9 + 1e-6 * ring_off,
                "ring 32 MiB (one flow per port): %.5f s = incast: false %.5f s" % (ring, ring_off))
    lines = text.splitlines(keepends=True)
    tcp_at = lines.index("tcp:\n")
    ib = "".join(l for i, l in enumerate(lines)
                 if not (i == tcp_at or (i > tcp_at and l.startswith("  ")
                                         and all(x.startswith("  ") for x in lines[tcp_at + 1:i + 1]))))
    ib = ib.replace("fabric: ethernet", "fabric: infiniband")
    assert "tcp:" not in ib and "ethernet" not in ib
    got = ps(ib, size)
    ok &= check(near(got, bulk) and abs(got - off) <= 1e-3 * off,
                "InfiniBand, same star: %.5f s vs 2nS/C = %.5f s (Ethernet incast: false %.5f s)"
                % (got, bulk, off))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
