#!/usr/bin/env python3
"""Trees under NCCL's LL stream through their stages; LL128 and Simple keep their chunks.

Usage: GRADSYNC=path/to/gradsync tree_streaming_bench_test.py TOPOLOGIES_DIR

LL flags every 16-byte line (NVIDIA/nccl src/device/prims_ll.h): a tree rank forwards each
line to its parent or children as soon as it has it. The full plan of a tree moves a small message as one chunk per tree, hop after hop, so at
step fidelity every hop of the tree's height waits for the whole chunk (4 x DGX H100, 128 KiB:
88 us, against 56 us measured on such a cluster, GH-nccltests309-H100-4x8-a-131072). Cutting
the same plan into ever finer chunks (--pipeline) converges to the streaming answer, which is
what `auto` replays: the tree's edges as flows with no pipeline fill (simulation.hpp
streams_through_stages). For each shipped multi-server topology and each size whose NCCL
protocol is LL, this asserts that

  - auto replays it at flow fidelity,
  - auto's time is within 2 % of step fidelity with 128 chunks per tree (the cut-through
    limit of the step plan: a fill of 1/128 of a chunk per hop is left),
  - and step fidelity with its default chunks is never faster than auto (store and forward
    only adds);

and, where NCCL's protocol is LL128 or Simple, that auto keeps the step plan (LL128 trees
across servers measure like store-and-forward of their chunks: simulation.hpp). A model that
charged LL trees store-and-forward, or streamed the others, fails.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

TOLERANCE = 0.02
FINE_PIPELINE = 128
SIZES = "32KiB", "512KiB"  # LL, then LL128 on NVLink servers; Simple from 512 KiB on p4de (EFA)
CASES = (("dgx-h100-4node-ib.yaml", ["--set", "nodes=2"]),
         ("dgx-h100-4node-ib.yaml", []),
         ("dgx-a100-4node-hdr-ib.yaml", []),
         ("aws-p4de-2node-efa.yaml", []))


def bench(gradsync, topology, extra, *args):
    rows = cli.bench_rows(topology, "--algo", "tree", "--min", SIZES[0], "--max", SIZES[1],
                          *extra, *args, exe=gradsync)
    return {int(r["bytes"]): r for r in rows}


def main():
    gradsync = cli.executable()
    topologies = sys.argv[1]
    failures, streamed, chunked = [], 0, 0
    for name, extra in CASES:
        path = os.path.join(topologies, name)
        auto = bench(gradsync, path, extra)
        fine = bench(gradsync, path, extra, "--fidelity", "step", "--pipeline", str(FINE_PIPELINE))
        coarse = bench(gradsync, path, extra, "--fidelity", "step")
        for size, row in sorted(auto.items()):
            label = f"{name} {' '.join(extra)} {size} B tree/{row['protocol']}"
            t, t_fine, t_coarse = row["time_us"], fine[size]["time_us"], coarse[size]["time_us"]
            print(f"{label:<50} auto {row['fidelity']:<4} {t:9.2f} us | step x{FINE_PIPELINE} "
                  f"{t_fine:9.2f} | step {t_coarse:9.2f}")
            if row["protocol"] == "LL":
                streamed += 1
                if row["fidelity"] != "flow":
                    failures.append(f"{label}: auto replayed it at {row['fidelity']} fidelity")
                if abs(t / t_fine - 1) > TOLERANCE:
                    failures.append(f"{label}: auto {t:.2f} us vs the cut-through limit "
                                    f"{t_fine:.2f} us")
                if t_coarse < t * (1 - 1e-9):
                    failures.append(f"{label}: store and forward {t_coarse:.2f} us is faster "
                                    f"than streaming {t:.2f} us")
            else:
                chunked += 1
                if row["fidelity"] != "step" or abs(t / t_coarse - 1) > 1e-9:
                    failures.append(f"{label}: {row['protocol']} is not replayed as the step plan")
    if streamed < 8 or chunked < 4:
        failures.append(f"too few cases: {streamed} streamed, {chunked} chunked")
    for f in failures:
        print("FAIL:", f)
    print(f"{streamed} streamed (LL) and {chunked} chunked (LL128, Simple) rows checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
