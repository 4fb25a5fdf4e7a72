#!/usr/bin/env python3
"""GPU <-> NIC traffic without peer to peer (node.pcie.p2p: false): closed form and a published run.

Usage: GRADSYNC=path/to/gradsync gdr_acs_bench_test.py TOPOLOGY [TOPOLOGIES_DIR]

TOPOLOGY is two NVSwitch servers with k NICs each, one PCIe switch per NIC shared with its
GPUs, every PCIe link (and the switch's uplink to the CPU) P per direction, NICs N per direction
(test/data/pcie/a100-2node-2hdr.yaml, the machines of NVIDIA/nccl#949).

1. Closed form (software: none, efficiency 1, ring with a channel per NIC). With P2P, GPU <-> NIC
   traffic turns inside the switch: busbw = k * min(N, P). Without it (PCIe ACS redirecting it to
   the root complex, or no GPUDirect RDMA) every byte climbs the uplink to the CPU and comes back
   down, so each direction of the uplink carries the NIC's sends and its receives:
   busbw = k * min(N, P / 2), N and P read from TOPOLOGY. 2 x HDR on Gen4: 50 and 32 GB/s
   (not half: N < P). Asserted
   within 2 %, in both fidelities, so that a model that ignored p2p (50), charged the uplink once
   (50), or halved the NIC instead of the uplink (25) fails.
   The same on a PCIe server (node.intra.p2p: false under one PCIe switch of g GPUs and one
   NIC, 2 servers, ring of one channel): the uplink carries each of the g - 1 hops inside the
   server, the hop to the NIC and the hop from it, once each way: busbw = min(N, P / (g + 1))
   = 32 / 5 = 6.4 GB/s for g = 4 (with P2P, 25: the NIC). GPU <-> NIC turning inside the switch
   would give 32 / 3 = 10.7.
   Servers of directly NVLinked GPUs (TOPOLOGIES_DIR/hgx-h100-4gpu-2node-hdr-ib.yaml, one NIC
   per GPU, NCCL's ring and tree, efficiency 1): busbw without P2P over busbw with it =
   min(N, P / 2) / min(N, P) = 16 / 25 (within 2 %), so that rings cut at a NIC other than the
   GPU's own (all NICs of the socket are as many hops away: a quarter of that or less) fail.
2. The published run (shipped defaults, software: nccl, NCCL's choice): nccl#949 measured
   ~27 GB/s with ACS on and 48 GB/s once ACS was set right. The simulated busbw at 1 GiB must be
   within 12 % of each (V2's per-row tolerance from 64 MiB up); without the model the ACS run
   would be simulated at 48 (+78 %).
"""
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

CLOSED_FORM_TOLERANCE = 0.02
PUBLISHED_TOLERANCE = 0.12  # V2's per-row busbw tolerance from 64 MiB (compare_nccl_tests.py)
# NVIDIA/nccl#949 (potaytoh, 2023-08-07 and 2023-08-10): busbw between 2 servers, GB/s.
MEASURED = {"true": 48.0, "false": 27.0}
UNITS = {"GB/s": 1.0, "Gbps": 1.0 / 8}
IDEAL = ("node.pcie.efficiency=1", "network.efficiency=1")

PCIE_SERVER = """name: pcie-2node-4gpu
software: none
nodes: 2
node:
  gpus: {gpus}
  intra: {{fabric: pcie, switch: true, bandwidth: {pcie}GB/s, latency: 500ns, efficiency: 1,
          p2p: {p2p}}}
  nics: 1
  nic_bandwidth: {nic}GB/s
  pcie: {{bandwidth: {pcie}GB/s, latency: 500ns, efficiency: 1}}
network: {{fabric: infiniband, shape: single-switch, link_latency: 1us, switch_latency: 200ns,
          efficiency: 1}}
"""


def gbps(text):
    m = re.fullmatch(r"([0-9.]+)\s*(GB/s|Gbps)", str(text))
    assert m, f"unsupported rate {text!r}"
    return float(m.group(1)) * UNITS[m.group(2)]


def rates(path):
    """NICs per server, NIC rate N and PCIe rate P (GB/s per direction) of a template."""
    node = yaml.safe_load(open(path))["node"]
    return int(node["nics"]), gbps(node["nic_bandwidth"]), gbps(node["pcie"]["bandwidth"])


def busbw(gradsync, topology, *sets, algo="ring", fidelity="auto"):
    args = []
    for s in sets:
        args += ["--set", s]
    rows = cli.bench_rows(topology, *args, "--algo", algo, "--min", "1GiB", "--max", "1GiB",
                          "--fidelity", fidelity, exe=gradsync)
    assert len(rows) == 1, rows
    return rows[0]["busbw_GBps"], rows[0]["algorithm"]


def main():
    gradsync = cli.executable("gradsync")
    topology = sys.argv[1]
    checks = cli.Checks()

    def near(what, got, expected, tolerance, unit=" GB/s"):
        err = got / expected - 1.0
        checks(abs(err) <= tolerance,
               f"{what}: {got:.3f}{unit}, expected {expected:.3f}{unit} ({err:+.1%})")

    k, nic, pcie = rates(topology)
    for p2p in ("true", "false"):
        expected = k * min(nic, pcie if p2p == "true" else pcie / 2)
        for fidelity in ("flow", "step"):
            got, _ = busbw(gradsync, topology, "software=none", *IDEAL, f"node.pcie.p2p={p2p}",
                           fidelity=fidelity)
            near(f"closed form, p2p {p2p}, {fidelity}", got, expected, CLOSED_FORM_TOLERANCE)
    gpus = 4
    for p2p in ("true", "false"):
        expected = min(nic, pcie if p2p == "true" else pcie / (gpus + 1))
        for fidelity in ("flow", "step"):
            rows = cli.bench_text(PCIE_SERVER.format(gpus=gpus, pcie=pcie, nic=nic, p2p=p2p),
                                  "--algo", "ring", "--min", "1GiB", "--max", "1GiB",
                                  "--fidelity", fidelity, exe=gradsync)
            near(f"closed form, PCIe server, intra.p2p {p2p}, {fidelity}", rows[0]["busbw_GBps"],
                 expected, CLOSED_FORM_TOLERANCE)
    if len(sys.argv) > 2:
        mesh = os.path.join(sys.argv[2], "hgx-h100-4gpu-2node-hdr-ib.yaml")
        _, mesh_nic, mesh_pcie = rates(mesh)
        expected = min(mesh_nic, mesh_pcie / 2) / min(mesh_nic, mesh_pcie)
        for algo in ("ring", "tree"):
            on, _ = busbw(gradsync, mesh, *IDEAL, algo=algo)
            off, _ = busbw(gradsync, mesh, *IDEAL, "node.pcie.p2p=false", algo=algo)
            near(f"NVLink mesh servers, {algo} ({on:.2f} -> {off:.2f} GB/s): without / with P2P",
                 off / on, expected, CLOSED_FORM_TOLERANCE, unit="")
    for p2p in ("true", "false"):
        got, algo = busbw(gradsync, topology, f"node.pcie.p2p={p2p}", algo="auto")
        near(f"nccl#949, p2p {p2p} (auto: {algo}) against the measured busbw", got,
             MEASURED[p2p], PUBLISHED_TOLERANCE)
    print("PASS" if not checks.failures else "FAIL")
    return 0 if not checks.failures else 1


if __name__ == "__main__":
    sys.exit(main())
