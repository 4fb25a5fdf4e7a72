#!/usr/bin/env python3
"""End-to-end physics of `gradsync run` (the scenario runner): each check runs
the CLI on a shipped scenario with --set overrides and asserts a relation that fails if the
model is wrong. Usage: GRADSYNC=path/to/gradsync scenario_physics_test.py SCENARIOS_DIR"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SCENARIOS = sys.argv[1] if len(sys.argv) > 1 else "scenarios"
checks = cli.Checks()


def run(scenario, *sets):
    args = ["run", os.path.join(SCENARIOS, scenario), "--json"]
    for s in sets:
        args += ["--set", s]
    return cli.run_json(*args, timeout=300)


def check(what, ok, detail):
    checks(ok, f"{what}: {detail}")


resnet2 = "resnet50-pcie-2node-10gbe.yaml"
bert_ps = "bert-large-ps-25gbe.yaml"
bert_ar = "bert-large-allreduce-25gbe.yaml"

# 1. No overlap: the step is at least compute + communication.
r = run(resnet2, "sync.overlap=none")
check("no overlap => step >= compute + comm",
      r["step_time_s"] >= r["compute_time_s"] + r["comm_time_s"] - 1e-9,
      f"step {r['step_time_s']:.6f} s, compute {r['compute_time_s']:.6f} + comm {r['comm_time_s']:.6f}")

# 2. Overlap reduces exposed communication.
b = run(resnet2, "sync.overlap=bucketed")
check("bucketed overlap exposes less communication than none",
      b["exposed_comm_s"] < r["exposed_comm_s"],
      f"{b['exposed_comm_s']:.6f} s vs {r['exposed_comm_s']:.6f} s")

# 3. Accumulation k divides synchronizations per sample by k.
a1 = run(resnet2, "training.accumulation=1")
a4 = run(resnet2, "training.accumulation=4")
per_sample_1 = a1["comm_time_s"] / a1["samples_per_step"]
per_sample_4 = a4["comm_time_s"] / a4["samples_per_step"]
check("accumulation 4 divides communication per sample by 4",
      abs(per_sample_1 / per_sample_4 - 4.0) < 1e-6,
      f"ratio {per_sample_1 / per_sample_4:.6f}")

# 4. int8 halves fp16 bytes on the wire.
dense = run(bert_ar)
int8 = run(bert_ar, "sync.compression.method=int8")
check("int8 halves fp16 wire bytes", abs(int8["wire_bytes_per_sync"] * 2 - dense["wire_bytes_per_sync"]) <= 64,
      f"{int8['wire_bytes_per_sync']:.0f} B vs {dense['wire_bytes_per_sync']:.0f} B")

# 5. A parameter server with 1 server is much slower than with 4 (incast at one NIC).
ps1 = run(bert_ps, "sync.ps.servers=1")
ps4 = run(bert_ps, "sync.ps.servers=4")
check("ps with 1 server is much slower than with 4", ps1["step_time_s"] > 2.0 * ps4["step_time_s"],
      f"{ps1['step_time_s']:.3f} s vs {ps4['step_time_s']:.3f} s")

# 6. A communication-heavy model on two servers over 1 GbE is slower than on one server.
pair = run(resnet2, "topology_overrides.node.nic_bandwidth=1Gbps")
check("two servers on 1 GbE train slower than one server",
      pair["samples_per_s"] < pair["one_node_samples_per_s"],
      f"{pair['samples_per_s']:.1f} samples/s on {pair['nodes']} servers vs "
      f"{pair['one_node_samples_per_s']:.1f} on one")

# 7. Verdict follows the 30 % rule.
for res in (r, b, pair, dense):
    share = res["exposed_comm_s"] / res["step_time_s"]
    expected = "communication-bound" if share > 0.30 else "compute-bound"
    check(f"verdict for exposed share {share:.2f}", res["verdict"] == expected, res["verdict"])

# 8. One DGX H100 (NVSwitch, NVLink4): auto picks NVLS for every bucket (NCCL's tuner does
#    from ~1.2 MB), and the collective time against a forced ring follows what `bench` gives
#    the two algorithms at the scenario's own bucket sizes within 10 % (the step replays the
#    same collectives; the sizes are read from the run's trace, one event per bucket).
one = ("llama-7b-4node-ib.yaml", "topology_overrides.nodes=1", "sync.overlap=none")
auto = run(*one)
ring = run(*one, "sync.algorithm=ring")
check("one DGX H100: auto picks nvls for every bucket", list(auto["algorithms"]) == ["nvls"],
      str(auto["algorithms"]))


def bench_us(topology, algo, size):
    return cli.bench_rows(topology, "--algo", algo, "--min", size, "--max", size,
                          timeout=300)[0]["time_us"]


def bucket_sizes(scenario, *sets):
    """The size of every bucket collective of one step, as the trace names them ("nvls 86 MiB")."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        args = ["run", os.path.join(SCENARIOS, scenario), "--trace", trace]
        for x in sets:
            args += ["--set", x]
        cli.run_ok(*args, timeout=300)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    names = [e["name"].split(" ", 1)[1].replace(" ", "") for e in events if e.get("cat") == "comm"]
    return names[: len(names) // auto["steps"]]  # one step's


dgx = os.path.join(SCENARIOS, "..", "topologies", "dgx-h100.yaml")
sizes = bucket_sizes(*one)
counts = {x: sizes.count(x) for x in set(sizes)}
expected = (sum(n * bench_us(dgx, "ring", x) for x, n in counts.items()) /
            sum(n * bench_us(dgx, "nvls", x) for x, n in counts.items()))
ratio = ring["comm_time_s"] / auto["comm_time_s"]
check(f"ring / nvls communication time near bench's ratio over the {len(sizes)} buckets "
      f"({len(counts)} sizes)", abs(ratio / expected - 1) < 0.10, f"{ratio:.3f} vs {expected:.3f}")
# Across servers NVLS is not modelled (no NVLSTree): auto stays off it, the one-server
# reference may use it.
multi = run("llama-7b-4node-ib.yaml")
check("4 DGX H100: no nvls across servers", "nvls" not in multi["algorithms"], str(multi["algorithms"]))

# 9. Parallel layouts share the network. The 70B 3D scenario moved to two PCIe servers with
#    one 10 GbE NIC each (DDP, tensor inside a server, a small model):
small = ["topology=../topologies/pcie-4gpu-2node-10gbe.yaml", "topology_overrides.nodes=2",
         "parallel.data=ddp", "parallel.pipeline=1", "sync.algorithm=ring",
         "compute.forward=100ms", "compute.backward=200ms", "model.params=1e9",
         "model.layers=16", "model.hidden=2048", "model.seq_len=2048", "training.accumulation=1"]
llama70 = "llama-70b-3d-64node-ib.yaml"
#    a. tensor 4: the 4 data-parallel groups (one per tensor rank) run at once through the one
#       NIC, so their collectives take 4x as long as with a NIC per GPU.
one_nic = run(llama70, *small, "parallel.tensor=4", "topology_overrides.node.nics=1")
four_nics = run(llama70, *small, "parallel.tensor=4", "topology_overrides.node.nics=4")
ratio = one_nic["comm_by_kind"]["dp"]["time_s"] / four_nics["comm_by_kind"]["dp"]["time_s"]
check("4 concurrent DP groups through one NIC take ~4x as long as through 4", abs(ratio / 4 - 1) < 0.05,
      f"{ratio:.3f}")
#    b. tensor 2: the tensor all-reduces of the backward share the GPUs' PCIe links with the
#       DP buckets running at the same time, so they take longer than alone; on DGX H100 they
#       run on NVLink and the DP traffic on the NICs, so nothing is shared.
pcie = run(llama70, *small, "parallel.tensor=2")["comm_by_kind"]["tp"]
check("PCIe: TP all-reduces slowed by the DP buckets they overlap",
      0.01 * pcie["time_s"] < pcie["contention_s"] < pcie["time_s"],
      f"+{pcie['contention_s'] * 1e3:.2f} ms of {pcie['time_s'] * 1e3:.2f} ms")
on_dgx = run(llama70)["comm_by_kind"]
check("DGX H100: NVLink TP and NIC DP share no link", abs(on_dgx["tp"]["contention_s"]) < 1e-9,
      f"TP +{on_dgx['tp']['contention_s']:.3g} s, DP +{on_dgx['dp']['contention_s']:.3g} s")
#    c. The 70B scenario's tensor groups are one DGX H100 each: their all-reduces run NVLS under
#       auto, and against a forced ring take what `bench` gives the two algorithms on one
#       DGX H100 at the activation size (s·b·h bf16 = 64 MiB), within 2 %.
ring70 = run(llama70, "sync.algorithm=ring")["comm_by_kind"]["tp"]
auto70 = run(llama70)
check("70B: tensor all-reduces run nvls", "tp allreduce (nvls)" in auto70["parallel"]["collectives"],
      str(auto70["parallel"]["collectives"]))
expected = bench_us(dgx, "ring", "64MiB") / bench_us(dgx, "nvls", "64MiB")
ratio = ring70["time_s"] / auto70["comm_by_kind"]["tp"]["time_s"]
check("70B: TP ring / nvls time = bench's ratio at 64 MiB", abs(ratio / expected - 1) < 0.02,
      f"{ratio:.4f} vs {expected:.4f}")

# 10. A one-server run is its own one-node reference (1, not 0); a parallel layout across
#     servers has none (null).
single = run("resnet50-pcie-4gpu.yaml")
check("one server: scaling vs one node is 1", single["scaling_efficiency_vs_one_node"] == 1.0 and
      single["one_node_samples_per_s"] == single["samples_per_s"], str(single["scaling_efficiency_vs_one_node"]))
check("parallel layout across servers: no one-node reference", auto70["scaling_efficiency_vs_one_node"] is None,
      str(auto70["scaling_efficiency_vs_one_node"]))

# 10b. Servers filled unevenly (12 GPUs of 8-GPU servers: 8 + 4): the one-node reference is a
#      whole server, the same step as the scenario run on its first 8 GPUs, and the scaling
#      divides by 12 / 8 = 1.5 servers' worth.
uneven = run("llama-7b-4node-ib.yaml", "gpus=12")
whole = run("llama-7b-4node-ib.yaml", "gpus=8")
check("8 + 4 GPUs: one-node reference = the run on one whole server",
      uneven["one_node_samples_per_s"] is not None and
      abs(uneven["one_node_samples_per_s"] / whole["samples_per_s"] - 1) < 1e-9,
      f"{uneven['one_node_samples_per_s']} vs {whole['samples_per_s']}")
expected_scaling = uneven["samples_per_s"] / (1.5 * whole["samples_per_s"])
check("8 + 4 GPUs: scaling vs one node over 1.5 servers' worth",
      uneven["scaling_efficiency_vs_one_node"] is not None and
      abs(uneven["scaling_efficiency_vs_one_node"] / expected_scaling - 1) < 1e-9 and
      0.0 < expected_scaling <= 1.0 + 1e-9,
      f"{uneven['scaling_efficiency_vs_one_node']} vs {expected_scaling}")

# 10c. nccl.algorithms (NCCL_ALGO) narrows `auto`: every bucket runs an allowed algorithm, the
#      default NVLSTree buckets move to ring; [nvlstree] cannot run inside one server, so the
#      one-node reference is null rather than another algorithm's.
algos = lambda *a: run("llama-7b-4node-ib.yaml", *[f"topology_overrides.nccl.algorithms={x}" for x in a])
free = run("llama-7b-4node-ib.yaml")
rings = algos("[ring]")
check("nccl.algorithms [ring]: every bucket a ring (NCCL's own choice is not)",
      set(rings["algorithms"]) == {"ring"} and set(free["algorithms"]) != {"ring"},
      f"{rings['algorithms']} vs {free['algorithms']}")
trees = algos("[tree]")
check("nccl.algorithms [tree]: every bucket a tree, a different communication time",
      set(trees["algorithms"]) == {"tree"} and trees["comm_time_s"] != rings["comm_time_s"],
      f"{trees['algorithms']} {trees['comm_time_s']} vs {rings['comm_time_s']}")
nvlstree_only = algos("[nvlstree]")
check("nccl.algorithms [nvlstree]: the run stands, no one-server reference",
      set(nvlstree_only["algorithms"]) == {"nvlstree"} and
      nvlstree_only["one_node_samples_per_s"] is None and
      nvlstree_only["scaling_efficiency_vs_one_node"] is None,
      f"{nvlstree_only['algorithms']} {nvlstree_only['one_node_samples_per_s']}")

# 11. Dedicated parameter servers sit on different machines (one NIC each on these servers):
#     4 servers on 4 machines push and pull through 4 NICs, so the step is far shorter than
#     with 1 (before, all four took the last machine's GPUs, behind one NIC: equal steps).
ps = ["topology_overrides.nodes=4", "sync.strategy=ps", "sync.ps.placement=dedicated"]
ded1 = run(resnet2, *ps, "sync.ps.servers=1")
ded4 = run(resnet2, *ps, "sync.ps.servers=4")
check("dedicated PS: 4 servers on 4 machines beat 1 by > 1.5x", ded1["step_time_s"] > 1.5 * ded4["step_time_s"],
      f"{ded1['step_time_s']:.3f} s vs {ded4['step_time_s']:.3f} s")

# 12. Parameter servers on hosts of their own (sync.ps.hosts: a CPU host per server, one NIC
#     each beside the GPU servers' NICs): every GPU trains, and 4 hosts give the servers 4
#     NICs. On 100 GbE with RDMA (RoCE, as BytePS runs) PS time falls with the NICs, >= 2.5x
#     from 1 to 4 hosts; over TCP sockets (the same 100 GbE) each bucket's push into a server is
#     an incast that pays TCP's minimum RTO once per round (tcp_model.hpp), whatever the host
#     count: the bandwidth part still falls >= 2.5x, the RTO part does not move.
def ps_hosts(k, *extra):
    return run(bert_ps, "topology=../topologies/eth-100gbe-4node.yaml", "sync.overlap=none",
               "sync.ps.placement=dedicated", f"sync.ps.servers={k}", f"sync.ps.hosts.count={k}",
               *extra)
h1, h4 = ps_hosts(1), ps_hosts(4)
check("ps.hosts: every GPU trains", h1["gpus"] == 32 and h1["samples_per_s"] > 0, str(h1["gpus"]))
roce1 = ps_hosts(1, "topology_overrides.network.fabric=roce")["comm_time_s"]
roce4 = ps_hosts(4, "topology_overrides.network.fabric=roce")["comm_time_s"]
check("ps.hosts on 100 GbE RoCE: 4 hosts cut PS time >= 2.5x against 1", roce1 >= 2.5 * roce4,
      f"{roce1:.3f} s vs {roce4:.3f} s ({roce1 / roce4:.2f}x)")
off1 = ps_hosts(1, "topology_overrides.network.tcp.incast=false")["comm_time_s"]
off4 = ps_hosts(4, "topology_overrides.network.tcp.incast=false")["comm_time_s"]
check("ps.hosts on 100 GbE TCP: the bandwidth part falls >= 2.5x", off1 >= 2.5 * off4,
      f"{off1:.3f} s vs {off4:.3f} s ({off1 / off4:.2f}x)")
rto1, rto4 = h1["comm_time_s"] - off1, h4["comm_time_s"] - off4
check("ps.hosts on 100 GbE TCP: the incast RTOs do not depend on the host count",
      rto1 > 0.5 and abs(rto1 / rto4 - 1) < 0.05,
      f"{rto1:.3f} s vs {rto4:.3f} s of RTOs; PS time {h1['comm_time_s']:.3f} vs {h4['comm_time_s']:.3f} s")

print(f"{checks.passed} passed, {len(checks.failures)} failed")
sys.exit(0 if not checks.failures else 1)
