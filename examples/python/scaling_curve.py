#!/usr/bin/env python3
"""Samples/s against GPUs for a scenario, from gradsync's Python module, plotted with matplotlib.

    PYTHONPATH=build /usr/bin/python3 examples/python/scaling_curve.py \
        scenarios/resnet50-pcie-2node-10gbe.yaml --nodes 1 2 4 8 16 -o scaling.png

Each point is one `gradsync.run(scenario, set={"topology_overrides.nodes": n})` (a simulation
in a child process: the same numbers as `gradsync run --json`). The dashed line is linear
scaling from the first point; the second panel is the share of the step spent waiting for
communication (the 30 % rule of thumb drawn as a line). Needs Debian's python3-matplotlib.
"""
import argparse

import matplotlib

matplotlib.use("Agg")  # files, no display
import matplotlib.pyplot as plt  # noqa: E402

import gradsync  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("-o", "--output", default="scaling.png")
    args = ap.parse_args()

    gpus, rate, exposed = [], [], []
    for n in args.nodes:
        r = gradsync.run(args.scenario, set={"topology_overrides.nodes": n})
        gpus.append(r["gpus"])
        rate.append(r["samples_per_s"])
        exposed.append(100.0 * r["exposed_comm_s"] / r["step_time_s"])
        print(f"{n:>4} nodes: {r['samples_per_s']:12.1f} samples/s, step {r['step_time_s'] * 1e3:9.1f} ms, "
              f"exposed communication {exposed[-1]:5.1f} %")

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.loglog(gpus, rate, "o-", label="gradsync")
    a.loglog(gpus, [rate[0] * g / gpus[0] for g in gpus], "--", color="gray", label="linear")
    a.set_xlabel("GPUs")
    a.set_ylabel("samples/s")
    a.legend()
    b.semilogx(gpus, exposed, "o-")
    b.axhline(30, linestyle="--", color="gray", label="30 % rule")
    b.set_xlabel("GPUs")
    b.set_ylabel("exposed communication (% of step)")
    b.legend()
    fig.suptitle(args.scenario)
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
