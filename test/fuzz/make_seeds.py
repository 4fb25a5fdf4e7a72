#!/usr/bin/env python3
"""Regenerates the seed corpora test/fuzz/corpus/<harness>/ from the repository's own inputs.

    python3 test/fuzz/make_seeds.py

Scenarios get their topology file inlined (a relative path would resolve against the
harness's display name, /tmp), sweeps say `base: base.yaml` (a file the sweep harness makes),
nccl-tests logs are cut to a few KB, the legacy trace to its first DDP step. Files are named
by where they came from; a few hand-written invalid inputs are added per harness. The whole
corpus stays well under 1 MB (test/fuzz/README.md).
"""
import json
import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "test/fuzz/corpus"


def put(harness, name, text):
    d = OUT / harness
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(text.encode() if isinstance(text, str) else text)


def small(path, limit=4096):
    return path.stat().st_size <= limit


def units():
    seeds = ["25MiB", "400Gbps", "50GB/s", "1.5us", "1.5 \u00b5s", "2\u03bcs", "0", "7e9",
             "7B", "1.5T", "350M", "10 ms", "1min", "2h", "8b", "25GiB/s", "100 b/s", "1e-3s",
             "mb", "5 mb", "1,5GB", "-1s", "nan GB", "inf s", "1e400B", "1e300T", "12 GB extra",
             "3m", "gbps", "  4 KiB  ", "0x10B", "1e-320B", ".5Pi B", "1..2s"]
    for i, s in enumerate(seeds):
        put("fuzz_units", f"seed-{i:02d}", s)


def topology():
    for p in sorted((ROOT / "topologies").glob("*.yaml")):
        put("fuzz_topology", "topologies-" + p.name, p.read_text())
    for sub in ("good", "fabric", "pcie", "tcp"):
        for p in sorted((ROOT / "test/data" / sub).glob("*.yaml")):
            put("fuzz_topology", f"{sub}-" + p.name, p.read_text())
    for p in sorted((ROOT / "test/data/bad").glob("*.yaml")):
        if small(p):
            put("fuzz_topology", "bad-" + p.name, p.read_text())


def inline_topology(scenario_text, scenario_dir):
    """`topology: FILE` replaced by the file's mapping, indented under `topology:`."""
    m = re.search(r"^topology:\s*(\S+)[^\n]*$", scenario_text, re.M)
    topo = (scenario_dir / m.group(1)).resolve().read_text()
    body = "\n".join(("  " + line) if line.strip() else "" for line in topo.splitlines())
    return scenario_text[: m.start()] + "topology:\n" + body + scenario_text[m.end():]


def scenario():
    for p in sorted((ROOT / "scenarios").glob("*.yaml")):
        put("fuzz_scenario", "scenarios-" + p.name, inline_topology(p.read_text(), p.parent))
    base = inline_topology((ROOT / "scenarios/resnet50-pcie-4gpu.yaml").read_text(),
                           ROOT / "scenarios")
    put("fuzz_scenario", "bad-unknown-key.yaml", base + "\nsync_typo: 1\n")
    put("fuzz_scenario", "bad-bucket-unit.yaml", base.replace("bucket: 25MiB", "bucket: 25"))
    put("fuzz_scenario", "bad-missing-topology.yaml", "name: x\nmodel: {preset: resnet-50}\ncompute: {forward: 1ms, backward: 2ms, samples_per_micro_batch: 1}\n")
    put("fuzz_scenario", "bad-topology-file.yaml", "name: x\ntopology: nowhere.yaml\nmodel: {layers: 2, hidden: 64}\n"
        "compute: {forward: 1ms, backward: 2ms, samples_per_micro_batch: 1}\n")
    put("fuzz_scenario", "overrides-flow.yaml",
        "name: flow\ntopology: {nodes: 2, node: {gpus: 2, intra: {fabric: pcie, switch: false,"
        " bandwidth: 32GB/s, latency: 500ns}, nics: 1, nic_bandwidth: 100Gbps,"
        " pcie: {bandwidth: 8GB/s, latency: 500ns}}, network: {shape: single-switch,"
        " fabric: infiniband, link_latency: 500ns, switch_latency: 1us}}\n"
        "topology_overrides: {nodes: 4, node.nic_bandwidth: 200Gbps}\n"
        "model: {layers: 4, hidden: 256, vocab: 1000, seq_len: 64, grad_dtype: fp32}\n"
        "compute: {forward: 1ms, backward: 2ms, samples_per_micro_batch: 8}\n"
        "sync: {strategy: allreduce, algorithm: ring, bucket: 1MiB, overlap: bucketed}\n")
    put("fuzz_scenario", "bad-inline-topology.yaml", re.sub(r"gpus: \d+", "gpus: 4000", base, 1))


def sweep():
    text = (ROOT / "examples/sweeps/fabric-scaling.yaml").read_text()
    text = re.sub(r"^base:.*$", "base: base.yaml", text, flags=re.M)
    put("fuzz_sweep", "examples-fabric-scaling.yaml", text)
    put("fuzz_sweep", "zip.yaml",
        "name: z\nbase: base.yaml\nzip:\n  sync.bucket: [1MiB, 25MiB, 100MiB]\n"
        "  sync.algorithm: [ring, tree, hierarchical]\n")
    put("fuzz_sweep", "grid-and-zip.yaml",
        "base: base.yaml\ngrid: {topology_overrides.nodes: [1, 2, 4]}\n"
        "zip: {sync.bucket: [1MiB, 2MiB], compute.forward: [1ms, 2ms]}\n")
    put("fuzz_sweep", "bad-zip-lengths.yaml",
        "base: base.yaml\nzip: {a.b: [1, 2], c: [1]}\n")
    put("fuzz_sweep", "bad-no-axes.yaml", "base: base.yaml\n")
    put("fuzz_sweep", "bad-base.yaml", "base: nowhere.yaml\ngrid: {x: [1]}\n")
    put("fuzz_sweep", "bad-twice.yaml", "base: base.yaml\ngrid: {x: [1]}\nzip: {x: [2]}\n")
    put("fuzz_sweep", "bad-empty.yaml", "")


def nccl_tests_log():
    for p in sorted((ROOT / "examples/nccl-tests").glob("*.log")):
        lines = p.read_text().splitlines(keepends=True)
        put("fuzz_nccl_tests_log", "examples-" + p.name, "".join(lines[:24]) + "".join(lines[-3:]))
    put("fuzz_nccl_tests_log", "ranks-two-runs.log", """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid  1234 on  host-a device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1235 on  host-b device  0 [0x18] NVIDIA H100 80GB HBM3
host-a:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    30.10   34.84   34.84      0    29.90   35.07   35.07      0
     2097152        524288     float     sum      -1    50.20   41.78   41.78      0    50.00   41.94   41.94      0
     4194304       1048576     float     sum      -1    90.40   46.40   46.40    N/A    90.10   46.55   46.55    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 41.01
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    31.10   33.72   33.72      0    30.90   33.93   33.93      0
# Avg bus bandwidth    : 33.7
""")
    put("fuzz_nccl_tests_log", "old-no-root.log", """\
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608       2097152     float     sum    120.5   69.61  121.8  5e-07    119.9   69.96  122.4  5e-07
""")
    put("fuzz_nccl_tests_log", "bad-garbage.log", "#       size count\nhello world\n")
    put("fuzz_nccl_tests_log", "bad-empty.log", "")


def trace():
    p = ROOT / "test/data/traces/kineto-ddp-2x-linear512-rank0.json"
    put("fuzz_trace", "kineto-ddp-2x-linear512-rank0.json", p.read_text())
    # Legacy (torch without Kineto): a JSON list of X events. Up to the second forward: one step.
    events = json.loads((ROOT / "test/data/traces/gpt2-l4-h256-v1000-cap0.5-rank0.json").read_text())
    forwards = [i for i, e in enumerate(events) if e["name"] == "DistributedDataParallel.forward"]
    cut = events[: forwards[1]]
    # Keep it small: drop aten:: events (the analysis does not read them).
    cut = [e for e in cut if not e["name"].startswith("aten::")]
    put("fuzz_trace", "legacy-gpt2-l4-one-step.json", json.dumps(cut, separators=(",", ":")))
    put("fuzz_trace", "bad-not-json.json", "{\"traceEvents\": [")
    put("fuzz_trace", "bad-dur.json", '[{"name": "x", "ph": "X", "ts": 1, "dur": -1, "tid": 1}]')
    put("fuzz_trace", "no-steps.json", '{"traceEvents": [{"name": "x", "ph": "X", "ts": 1, '
        '"dur": 2, "pid": 1, "tid": 1, "cat": "cpu_op", "args": {}}]}')


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    for make in (units, topology, scenario, sweep, nccl_tests_log, trace):
        make()
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"{sum(1 for f in OUT.rglob('*') if f.is_file())} files, {total / 1024:.0f} KiB in {OUT}")
