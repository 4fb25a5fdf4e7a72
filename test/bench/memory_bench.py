#!/usr/bin/env python3
"""How much memory gradsync's simulations take, beside the estimate it checks before running.

Usage: GRADSYNC=/path/to/gradsync python3 test/bench/memory_bench.py [SOURCE_DIR] [--quick]

Not a CTest test (peak RSS depends on the build and the allocator). Each case runs with
GRADSYNC_MEMORY_LOG=1, which prints every memory check's estimate (memory_budget.hpp), and
its peak resident set is read from wait4 (ru_maxrss). The table shows the estimate (the
platform plus the largest plan) beside the measured peak less that of an 8-rank run on 32
servers (the executable, its libraries, SimGrid's start-up): est/above near 1 means the
checks before a run refuse what would not fit, and nothing that would. Cases are chosen so that one state dominates:
the SimGrid platform (flow fidelity, fat trees of 128 to 2,048 DGX H100 servers) or the plan
(step fidelity, 16 to 64 servers). Python 3 standard library only.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

FAT_TREE = "topologies/dgx-h100-32node-fat-tree-ib.yaml"


def peak_rss(cmd, env=None):
    """(exit code, stderr, peak RSS in bytes of this child, from wait4's rusage)."""
    rc, _, err, _, rss = cli.run_measured(*cmd[1:], exe=cmd[0], env=env)
    return rc, err, rss


def estimates(stderr):
    """(platform bytes, largest plan bytes) from GRADSYNC_MEMORY_LOG's lines."""
    platform, plan = 0.0, 0.0
    for m in re.finditer(r"memory: (.*?) needs about ([0-9.]+) ([MG])B", stderr):
        value = float(m.group(2)) * (1e9 if m.group(3) == "G" else 1e6)
        if "platform" in m.group(1):
            platform += value
        else:
            plan = max(plan, value)
    return platform, plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", nargs="?", default=".")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    exe = cli.executable("build/gradsync")
    topo = os.path.join(args.source, FAT_TREE)
    bench = [exe, "bench", topo, "-b", "1GiB", "-e", "1GiB"]
    cases = [("fat tree, ring, flow, 8 ranks (baseline)", ["--set", "nodes=32", "-g", "8"])]
    nodes_flow = [128, 512] if args.quick else [128, 512, 1024, 2048]
    nodes_step = [16, 32] if args.quick else [16, 32, 64]
    for n in nodes_step:
        cases.append((f"fat tree {n} servers, ring, step", ["--set", f"nodes={n}", "--algo", "ring",
                                                             "--fidelity", "step"]))
    for n in nodes_flow:
        for algo in ("ring", "tree"):
            cases.append((f"fat tree {n} servers, {algo}, flow",
                          ["--set", f"nodes={n}", "--algo", algo, "--fidelity", "flow"]))
    rows = []
    baseline = None
    for name, extra in cases:
        cmd = bench + extra
        rc, err, rss = peak_rss(cmd, dict(os.environ, GRADSYNC_MEMORY_LOG="1"))
        if rc != 0:
            print(f"{name}: exit {rc}: {err.strip()[-300:]}", file=sys.stderr)
            return 1
        if baseline is None:
            baseline = rss
        platform, plan = estimates(err)
        rows.append((name, rss, rss - baseline, platform, plan))
    print(f"{'case':40} {'peak RSS':>9} {'above base':>10} {'platform':>9} {'plan':>8} "
          f"{'estimate':>9} {'est/above':>9}")
    for name, rss, above, platform, plan in rows:
        total = platform + plan
        ratio = f"{total / above:9.2f}" if above > 5e6 else "        -"
        print(f"{name:40} {rss / 1e6:6.0f} MB {above / 1e6:7.0f} MB {platform / 1e6:6.0f} MB "
              f"{plan / 1e6:5.0f} MB {total / 1e6:6.0f} MB {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
