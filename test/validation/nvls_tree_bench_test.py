#!/usr/bin/env python3
"""`gradsync bench --algo nvlstree` on two NVSwitch servers, against its closed form.

Usage: GRADSYNC=path/to/gradsync nvls_tree_bench_test.py TOPOLOGY_DIR

On aws-p5-2node-efa.yaml (2 x 8 H100, 400 Gb/s of EFA per GPU):
  * NVLSTree's large-message busbw is the GPU port's: each GPU sends S into its NVSwitch plus
    its shard's store (S/8), at NVLink 450 GB/s x efficiency 0.80 x NVLS factor 0.76, so
    busbw = 2(n-1)/n x 273.6 / 1.125 = 456 GB/s for 16 ranks (within 6 %: pipeline fill);
  * step and flow fidelity agree (1 GiB, 8 B);
  * `--algo auto` runs NVLSTree there and NVLS on one server (aws-p5-1node.yaml);
  * an A100 cluster (NVLink3, no NVLS) refuses --algo nvlstree with exit 2 and a reason;
  * NVLS follows the topology's `gpu:` (an H100 server declared as A100s refuses it);
  * node.intra.nvls_efficiency scales NVLS's busbw;
  * the tree latency regression: a 2-server tree at 8 B pays both network crossings in step
    fidelity as in flow fidelity (aws-p4de-2node-efa.yaml).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402


def bench(gradsync, topology, algo, size, fidelity="auto"):
    rows = cli.bench_rows(topology, "--algo", algo, "--min", size, "--max", size, "--fidelity",
                          fidelity, exe=gradsync)
    assert len(rows) == 1, rows
    return rows[0]


def variant(topology, tmp, old, new):
    """A copy of `topology` in `tmp` with the first `old` replaced by `new`; returns its path."""
    with open(topology, encoding="utf-8") as f:
        text = f.read()
    assert old in text, (topology, old)
    path = os.path.join(tmp, f"variant-{len(os.listdir(tmp))}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))
    return path


def main():
    gradsync = cli.executable("gradsync")
    topo_dir = sys.argv[1]
    p5x2 = os.path.join(topo_dir, "aws-p5-2node-efa.yaml")
    checks = cli.Checks()

    def check(name, ok, detail):
        checks(ok, name + ": " + detail)

    big = bench(gradsync, p5x2, "nvlstree", "16GiB")
    want = 2 * 15 / 16 * 450 * 0.80 * 0.76 / 1.125
    check("NVLSTree 16 GiB busbw vs the GPU port's closed form",
          abs(big["busbw_GBps"] / want - 1) <= 0.06,
          f"{big['busbw_GBps']:.1f} GB/s vs {want:.1f}")
    for size in ("8B", "1GiB"):
        step = bench(gradsync, p5x2, "nvlstree", size, "step")["time_us"]
        flow = bench(gradsync, p5x2, "nvlstree", size, "flow")["time_us"]
        check(f"NVLSTree {size} step vs flow", abs(step / flow - 1) <= 0.05,
              f"step {step:.1f} us, flow {flow:.1f} us")
    auto = bench(gradsync, p5x2, "auto", "1GiB")
    check("auto on 2 servers picks nvlstree at 1 GiB", auto["algorithm"] == "nvlstree",
          auto["algorithm"])
    one = bench(gradsync, os.path.join(topo_dir, "aws-p5-1node.yaml"), "auto", "1GiB")
    check("auto on 1 server picks nvls at 1 GiB", one["algorithm"] == "nvls", one["algorithm"])
    r = cli.run("bench", os.path.join(topo_dir, "dgx-a100-4node-hdr-ib.yaml"), "--algo",
                "nvlstree", "--min", "1MiB", "--max", "1MiB", exe=gradsync)
    check("nvlstree on A100 servers is bad input",
          r.returncode == 2 and "NVLink4" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"exit {r.returncode}, {r.stderr.strip()!r}")
    dgx = os.path.join(topo_dir, "dgx-h100.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        # The topology's gpu: decides NVLS, not the NVLink rate: an H100 server declared A100s.
        declared = variant(dgx, tmp, "gpu: h100", "gpu: a100")
        r = cli.run("bench", declared, "--algo", "nvls", "--min", "1MiB", "--max", "1MiB",
                    exe=gradsync)
        check("nvls follows gpu: (h100 server declared a100)",
              r.returncode == 2 and "ampere (the topology's gpu:)" in r.stderr,
              f"exit {r.returncode}, {r.stderr.strip()!r}")
        # node.intra.nvls_efficiency overrides NVLS's share of the port: busbw scales with it.
        half = variant(dgx, tmp, "switch: true", "switch: true\n    nvls_efficiency: 0.38")
        base = bench(gradsync, dgx, "nvls", "16GiB")
        slow = bench(gradsync, half, "nvls", "16GiB")
        ratio = slow["busbw_GBps"] / base["busbw_GBps"]
        check("nvls_efficiency 0.38 halves NVLS busbw (default 0.76)", abs(ratio - 0.5) <= 0.02,
              f"{slow['busbw_GBps']:.1f} / {base['busbw_GBps']:.1f} = {ratio:.3f}")
    p4de = os.path.join(topo_dir, "aws-p4de-2node-efa.yaml")
    step = bench(gradsync, p4de, "tree", "8B", "step")["time_us"]
    flow = bench(gradsync, p4de, "tree", "8B", "flow")["time_us"]
    check("2-server tree at 8 B: step pays both crossings like flow", abs(step / flow - 1) <= 0.02,
          f"step {step:.1f} us, flow {flow:.1f} us")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
