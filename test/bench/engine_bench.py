#!/usr/bin/env python3
"""How fast gradsync simulates as clusters grow: wall time of fixed `bench` and `run` cases.

Usage: GRADSYNC=/path/to/gradsync python3 test/bench/engine_bench.py [SOURCE_DIR] [--repeat N] [--quick]

Not a CTest test (wall-clock figures depend on the machine and on sanitizers). Each case runs
N times (default 3) and reports the best wall time and the simulated time it printed, so a
change to the engine can be measured before and after on the same machine:

  * AllReduce of 1 GiB (ring, tree, NVLSTree) on the DGX H100 fat tree
    (topologies/dgx-h100-32node-fat-tree-ib.yaml) at 4, 16, 64 and 128 servers (32 to 1024
    GPUs), fidelity auto;
  * ring of 64 MiB at step fidelity on the 2:1 RoCE leaf-spine without ECN
    (topologies/roce-16node-leaf-spine.yaml with `ecn: false`: the PFC fixed points) at 4, 8
    and 16 servers;
  * one training step of each shipped scenario (`gradsync run --json`).

For each series it also prints the growth exponent between the two largest sizes,
log(t2/t1) / log(gpus2/gpus1): 1 is linear in GPUs. --quick drops the largest size of each
series. Python 3 standard library only.
"""
import argparse
import json
import math
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20


def with_overrides(source, path, overrides, tmp):
    """A copy of the topology `path` with top-level or nested `key: value` lines replaced."""
    with open(os.path.join(source, path), encoding="utf-8") as f:
        text = f.read()
    for key, value in overrides.items():
        text, n = re.subn(rf"(?m)^(\s*){re.escape(key)}:[^\n#]*", rf"\g<1>{key}: {value} ", text,
                          count=1)
        if n != 1:
            raise RuntimeError(f"{path}: no '{key}:' line to override")
    name = os.path.splitext(os.path.basename(path))[0] + "-" + "-".join(
        f"{k}{v}" for k, v in overrides.items()) + ".yaml"
    out = os.path.join(tmp, name)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return out


def timed(cmd, repeat):
    """(best wall seconds, parsed JSON of the last run)."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        stdout = cli.run_ok(*cmd[1:], exe=cmd[0])  # CommandFailed (a RuntimeError) unless 0
        wall = time.perf_counter() - t0
        best = min(best, wall)
        out = json.loads(stdout)
    return best, out


def measured(cmd):
    """(wall seconds, peak RSS in bytes, parsed JSON) of one run, the RSS from wait4's rusage."""
    rc, out, err, wall, rss = cli.run_measured(*cmd[1:], exe=cmd[0])
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} -> exit {rc}: {err.strip()[-300:]}")
    return wall, rss, json.loads(out)


def fit_exponent(points):
    """Least-squares slope of log(wall) against log(x) over the (x, wall) points of 0.1 s or more."""
    pts = [(math.log(f), math.log(w)) for f, w in points if w >= 0.1 and f > 0]
    if len(pts) < 2:
        pts = [(math.log(f), math.log(w)) for f, w in points[-2:] if w > 0 and f > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx > 0 else float("nan")


def scale_table(gradsync, source, tmp, quick):
    """8 -> 16,384 GPUs: wall, peak RSS and SimGrid flows per case, and the fit exponent."""
    nodes_list = [1, 4, 16, 64, 256, 1024, 2048]
    if quick:
        nodes_list = nodes_list[:-2]
    cases = [
        ("bench ring 1GiB, fat tree", "topologies/dgx-h100-32node-fat-tree-ib.yaml",
         ["--algo", "ring", "--min", "1GiB", "--max", "1GiB"]),
        ("bench auto 1GiB, rail-optimized", "topologies/dgx-h100-4node-ib.yaml",
         ["--algo", "auto", "--min", "1GiB", "--max", "1GiB"]),
        ("bench auto 16GiB, rail-optimized", "topologies/dgx-h100-4node-ib.yaml",
         ["--algo", "auto", "--min", "16GiB", "--max", "16GiB"]),
        ("bench auto 1GiB, fat tree", "topologies/dgx-h100-32node-fat-tree-ib.yaml",
         ["--algo", "auto", "--min", "1GiB", "--max", "1GiB"]),
        # No GPU-NIC P2P: no switch stands in for a GPU or NIC, routes into a server follow its
        # border switches' searches (sim/topology/router_entries.cpp).
        ("bench auto 1GiB, rail-opt, no P2P", "topologies/dgx-h100-4node-ib.yaml",
         ["--set", "node.pcie.p2p=false", "--algo", "auto", "--min", "1GiB", "--max", "1GiB"]),
        # The same on the fat tree: each GPU's rail runs between its NIC's and its peer NIC's
        # edge switches (ecmp_paths.cpp, spread_rail_ports).
        ("bench auto 1GiB, fat tree, no P2P", "topologies/dgx-h100-32node-fat-tree-ib.yaml",
         ["--set", "node.pcie.p2p=false", "--algo", "auto", "--min", "1GiB", "--max", "1GiB"]),
    ]
    print(f"{'case':<36} {'GPUs':>6} {'wall s':>8} {'RSS GB':>7} {'flows':>8} {'result':>16}")
    for label, path, extra in cases:
        points = []
        for nodes in nodes_list:
            topo = with_overrides(source, path, {"nodes": nodes}, tmp)
            wall, rss, rows = measured([gradsync, "bench", topo, *extra, "--json"])
            r = rows[0]
            print(f"{label:<36} {nodes * 8:>6} {wall:>8.2f} {rss / 1e9:>7.2f} {r['flows']:>8} "
                  f"{r['busbw_GBps']:>7.1f} GB/s {r['algorithm']}")
            points.append((nodes * 8, r["flows"], wall))
        print(f"  fit: wall ~ GPUs^{fit_exponent([(g, w) for g, _, w in points]):.2f}, "
              f"~ flows^{fit_exponent([(f, w) for _, f, w in points]):.2f}")
    points = []
    for nodes in nodes_list:
        wall, rss, out = measured([gradsync, "run", os.path.join(source, "scenarios", "llama-7b-4node-ib.yaml"),
                                   "--set", f"topology_overrides.nodes={nodes}", "--json"])
        print(f"{'run llama-7b-4node-ib (7B, DDP)':<36} {nodes * 8:>6} {wall:>8.2f} {rss / 1e9:>7.2f} "
              f"{'':>8} {out['step_time_s']:>14.4f} s")
        points.append((nodes * 8, wall))
    print(f"  fit: wall ~ GPUs^{fit_exponent(points):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", default=cli.SOURCE_DIR)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the largest size of each series")
    ap.add_argument("--scale", action="store_true",
                    help="only the scaling table, 8 to 16,384 GPUs (minutes; --quick: to 2,048)")
    args = ap.parse_args()
    gradsync = cli.executable()
    source = os.path.abspath(args.source)
    if args.scale:
        print("# gradsync scaling: one run per point, wall seconds, peak RSS (GB = 1e9 B), "
              "SimGrid flows started")
        with tempfile.TemporaryDirectory() as tmp:
            scale_table(gradsync, source, tmp, args.quick)
        return

    fat_tree_nodes = [4, 16, 64, 128]
    roce_nodes = [4, 8, 16]
    if args.quick:
        fat_tree_nodes, roce_nodes = fat_tree_nodes[:-1], roce_nodes[:-1]

    print(f"# gradsync engine benchmark: best of {args.repeat}, wall seconds; GB = 1e9 B")
    print(f"{'case':<44} {'GPUs':>5} {'wall s':>8} {'simulated':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        series = []
        for algo in ("ring", "tree", "nvlstree"):
            points = []
            for nodes in fat_tree_nodes:
                topo = with_overrides(source, "topologies/dgx-h100-32node-fat-tree-ib.yaml",
                                      {"nodes": nodes}, tmp)
                wall, rows = timed([gradsync, "bench", topo, "--algo", algo, "--min", "1GiB",
                                    "--max", "1GiB", "--json"], args.repeat)
                gpus = nodes * 8
                print(f"{'bench ' + algo + ' 1GiB, DGX H100 fat tree':<44} {gpus:>5} {wall:>8.3f} "
                      f"{rows[0]['time_us']:>9.0f} us")
                points.append((gpus, wall))
            series.append((f"{algo} fat tree", points))
        points = []
        for nodes in roce_nodes:
            topo = with_overrides(source, "topologies/roce-16node-leaf-spine.yaml",
                                  {"nodes": nodes, "ecn": "false"}, tmp)
            wall, rows = timed([gradsync, "bench", topo, "--algo", "ring", "--min", "64MiB",
                                "--max", "64MiB", "--fidelity", "step", "--json"], args.repeat)
            gpus = nodes * 8
            print(f"{'bench ring 64MiB step, RoCE PFC without ECN':<44} {gpus:>5} {wall:>8.3f} "
                  f"{rows[0]['time_us']:>9.0f} us")
            points.append((gpus, wall))
        series.append(("RoCE PFC ring step", points))
        scenarios = sorted(f for f in os.listdir(os.path.join(source, "scenarios"))
                           if f.endswith(".yaml"))
        for name in scenarios:
            wall, out = timed([gradsync, "run", os.path.join(source, "scenarios", name), "--json"],
                              args.repeat)
            print(f"{'run ' + name:<44} {'':>5} {wall:>8.3f} {out['step_time_s']:>10.4f} s")
    print("# growth between the two largest sizes (1 = linear in GPUs)")
    for label, points in series:
        (g1, t1), (g2, t2) = points[-2], points[-1]
        exponent = math.log(t2 / t1) / math.log(g2 / g1) if t1 > 0 and t2 > 0 else float("nan")
        print(f"  {label:<24} {g1}->{g2} GPUs: x{t2 / t1:.2f} wall, exponent {exponent:.2f}")


if __name__ == "__main__":
    main()
