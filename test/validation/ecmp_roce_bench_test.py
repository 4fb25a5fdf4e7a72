#!/usr/bin/env python3
"""Fabric models through `gradsync bench` (sim/fabric/README.md), on the topologies of
test/data/fabric:

  ecmp        static ECMP, 1 QP: over 16 hash seeds, the mean slowdown of a 2-server ring on a
              leaf-spine (8 flows hashed on 8 uplinks per direction) against adaptive routing is
              within 15 % of the Monte Carlo worst-link load of 8 balls in 8 bins
              (2.6x), and every seed's slowdown is at least 1
  qps         network.qps: 4 lowers the mean slowdown to within 15 % of the Monte Carlo load of
              32 quarter-flows in 8 bins (1.8x), below the 1-QP mean
  adaptive    adaptive routing: busbw = the node's NIC line rate (no collisions) within 1 %
  incast      parameter-server incast (16 workers -> 1 server): lossless RoCE (PFC, with and
              without ECN) = the closed form 2 S n / B; lossy RoCE (pfc: false) with a 256 KB
              buffer = push at go-back-N goodput + one retransmission timeout + pull, and with
              ECN just the timeout; the sizes and fabric numbers come from the YAML
  ib-default  fabric: infiniband without network.routing routes adaptively (same busbw as
              adaptive RoCE); routing: static on InfiniBand collides like ECMP

Usage: GRADSYNC=/path/to/gradsync ecmp_roce_bench_test.py CASE DATA_DIR
"""
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SEEDS = range(16)


def bench(text, *args):
    return cli.bench_text(text, *args)[0]


def edit(text, **keys):
    """Replaces `key: value` lines (or roce: {...}) of the YAML text."""
    for key, value in keys.items():
        text, n = re.subn(r"(?m)^(\s*%s:).*$" % key, r"\g<1> %s" % value, text)
        assert n == 1, (key, n)
    return text


def ring_busbw(text):
    return bench(text, "--algo", "ring", "--min", "1GiB", "--max", "1GiB")["busbw_GBps"]


def monte_carlo_worst_load(uplinks, qps, trials=200000):
    """Expected worst-link load of `uplinks` flows of `qps` QPs each, hashed on `uplinks` links,
    relative to a perfect spread (balls into bins)."""
    rng = random.Random(1)
    total = 0.0
    for _ in range(trials):
        bins = [0] * uplinks
        for _ in range(uplinks * qps):
            bins[rng.randrange(uplinks)] += 1
        total += max(bins) / qps
    return total / trials


check = cli.Checks()


def slowdowns(text, qps):
    ideal = ring_busbw(edit(text, routing="adaptive"))
    return [ideal / ring_busbw(edit(text, routing="static", qps=qps, ecmp_seed=s)) for s in SEEDS]


def main():
    case, data = sys.argv[1], sys.argv[2]
    ls = open(os.path.join(data, "ecmp_leaf_spine_8.yaml")).read()
    ok = True
    if case in ("ecmp", "qps"):
        one = slowdowns(ls, 1)
        mc1 = monte_carlo_worst_load(8, 1)
        mean1 = sum(one) / len(one)
        print("1 QP slowdowns:", " ".join("%.3f" % x for x in one))
        if case == "ecmp":
            ok &= check(min(one) >= 0.99, "every seed at least as slow as adaptive (min %.3f)" % min(one))
            ok &= check(abs(mean1 - mc1) / mc1 <= 0.15,
                        "mean slowdown %.3f vs Monte Carlo worst-link load %.3f (8 uplinks, 1 QP)" % (mean1, mc1))
        else:
            four = slowdowns(ls, 4)
            mc4 = monte_carlo_worst_load(8, 4)
            mean4 = sum(four) / len(four)
            print("4 QP slowdowns:", " ".join("%.3f" % x for x in four))
            ok &= check(abs(mean4 - mc4) / mc4 <= 0.15,
                        "mean slowdown %.3f vs Monte Carlo %.3f (8 uplinks, 4 QPs)" % (mean4, mc4))
            ok &= check(mean4 < mean1, "4 QPs (%.3f) collide less than 1 QP (%.3f)" % (mean4, mean1))
    elif case == "adaptive":
        nic_gbps = 100e9 / 8 / 1e9 * 8  # 8 NICs of 100 Gb/s per server, GB/s
        got = ring_busbw(edit(ls, routing="adaptive"))
        ok &= check(abs(got - nic_gbps) / nic_gbps <= 0.01,
                    "adaptive busbw %.3f GB/s vs 8 x 100 Gb/s = %.3f GB/s" % (got, nic_gbps))
    elif case == "ib-default":
        ib = edit(ls, fabric="infiniband").replace("  routing: static\n", "")
        got = ring_busbw(ib)
        want = ring_busbw(edit(ls, routing="adaptive"))
        ok &= check(abs(got - want) / want <= 1e-6, "IB default busbw %.3f = adaptive %.3f" % (got, want))
        static = [ring_busbw(edit(ib + "  routing: static\n", ecmp_seed=s)) for s in SEEDS]
        ok &= check(min(static) < want * 0.9, "IB static routing collides (worst busbw %.3f)" % min(static))
    elif case == "incast":
        text = open(os.path.join(data, "roce_incast_star.yaml")).read()
        size = 64 * 2**20  # bytes, per worker
        workers = 16
        rate = 100e9 / 8  # B/s, NIC line rate (efficiency 1)
        route_latency = 500e-9 + 600e-9 + 500e-9 + 600e-9 + 500e-9  # GPU-NIC-switch-NIC-GPU, s
        bdp = rate * 2 * route_latency
        buffer, timeout = 256e3, 10e-3
        phase = size * workers / rate  # one phase (push or pull) through the server's NIC

        def run(roce):
            return bench(edit(text, roce=roce), "--algo", "ps", "--ps-servers", "1",
                         "--ps-placement", "dedicated", "--min", "64MiB", "--max", "64MiB")["time_us"] * 1e-6

        lossless = run("{pfc: true, ecn: true}")
        ok &= check(abs(lossless - 2 * phase) / (2 * phase) <= 0.01,
                    "lossless (PFC + ECN) %.6f s = 2 S n / B %.6f s" % (lossless, 2 * phase))
        pfc_only = run("{pfc: true, ecn: false}")
        ok &= check(abs(pfc_only - lossless) / lossless <= 1e-6,
                    "PFC without ECN, one flow per ingress port: %.6f s = lossless" % pfc_only)
        goodput = min(1.0, (bdp + buffer) / (workers * bdp))
        want = phase / goodput + timeout + phase
        lossy = run("{pfc: false, ecn: false, buffer: 256KB, retransmit_timeout: 10ms}")
        ok &= check(abs(lossy - want) / want <= 0.01,
                    "lossy %.6f s = push at goodput %.3f + timeout + pull = %.6f s" % (lossy, goodput, want))
        lossy_ecn = run("{pfc: false, ecn: true, buffer: 256KB, retransmit_timeout: 10ms}")
        want = 2 * phase + timeout
        ok &= check(abs(lossy_ecn - want) / want <= 0.01,
                    "lossy with ECN %.6f s = lossless + one timeout %.6f s" % (lossy_ecn, want))
        ok &= check(lossy > lossy_ecn > lossless, "lossy > lossy+ECN > lossless")
    else:
        print("unknown case", case)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
