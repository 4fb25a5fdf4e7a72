#!/usr/bin/env python3
"""How fast `gradsync sweep` is, and what it costs per point beyond the simulation itself.

Usage: GRADSYNC=/path/to/gradsync python3 test/bench/sweep_bench.py [SOURCE_DIR] [POINTS]

Not a CTest test (wall-clock figures depend on the machine and on sanitizers). It runs a sweep
of POINTS (default 100) small points (resnet50-pcie-2node-10gbe: 1..N servers x ring/tree x
bucket sizes) and prints:
  - the sweep's wall time with -j 2 (target: < 60 s for 100 points);
  - per point with -j 1: the sweep's wall time / points, the same points run one after the
    other as plain `gradsync run --json` processes (no sweep), and `gradsync --version` (process
    start: exec, dynamic loading, static initialization — no YAML, no simulation);
  - the workers' mean lifetime as the sweep measured it (wall_s of the records);
  - overhead per point beyond the simulation = process start + the sweep's own bookkeeping
    (sweep per point - worker lifetime: fork, pipes, JSON parse, the fsync'ed temp+rename of
    the point file, the results.jsonl append) (target: < 50 ms).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SOURCE = cli.source_dir(1)
POINTS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
SCENARIO = os.path.join(SOURCE, "scenarios", "resnet50-pcie-2node-10gbe.yaml")
timed = cli.wall_time


def main():
    tmp = tempfile.mkdtemp(prefix="gradsync-sweep-bench-")
    try:
        nodes = list(range(1, POINTS // 10 + 1)) if POINTS >= 10 else [1]
        sweep = os.path.join(tmp, "bench.yaml")
        with open(sweep, "w") as f:
            f.write(f"base: {SCENARIO}\ngrid:\n  topology_overrides.nodes: {nodes}\n"
                    "  sync.algorithm: [ring, tree]\n"
                    "  sync.bucket: [5MiB, 10MiB, 25MiB, 50MiB, 100MiB]\n")
        n = len(nodes) * 10
        cli.executable()
        j2 = timed("sweep", sweep, "-o", os.path.join(tmp, "j2"), "-j", "2")
        j1 = min(timed("sweep", sweep, "-o", os.path.join(tmp, f"j1-{k}"), "-j", "1")
                 for k in range(2))
        records = cli.read_jsonl(os.path.join(tmp, "j1-0", "results.jsonl"))
        worker = sum(r["wall_s"] for r in records) / n
        assert len(records) == n and all(r["ok"] for r in records), "every point must run"
        plain = 0.0
        for r in records:
            args = ["run", SCENARIO, "--json"]
            for k, v in r["sets"].items():
                args += ["--set", f"{k}={v}"]
            plain += timed(*args)
        start_cost = min(timed("--version") for _ in range(20))
        per_point = j1 / n
        plain_per_point = plain / n
        simulation = plain_per_point - start_cost
        print(f"points: {n}   cpus: {os.cpu_count()}")
        print(f"sweep -j 2: {j2:.2f} s ({j2 / n * 1000:.1f} ms per point)   target < 60 s")
        print(f"sweep -j 1: {per_point * 1000:.1f} ms per point")
        print(f"worker lifetime inside the sweep (mean wall_s): {worker * 1000:.1f} ms")
        print(f"plain `gradsync run --json`, one after the other: {plain_per_point * 1000:.1f} ms per point")
        print(f"process start (`gradsync --version`, best of 20): {start_cost * 1000:.1f} ms")
        print(f"=> simulation (load + simulate + print) ~ {simulation * 1000:.1f} ms per point")
        print(f"=> sweep bookkeeping (sweep per point - worker lifetime): {(per_point - worker) * 1000:.1f} ms per point")
        print(f"=> overhead beyond the simulation (process start + bookkeeping): "
              f"{(start_cost + per_point - worker) * 1000:.1f} ms per point   target < 50 ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
