#!/usr/bin/env python3
"""V2 check (README.md, Fidelity over the whole nccl-tests curve): gradsync bench against
published nccl-tests all_reduce_perf runs, over the whole curve.

For every system of the measured rows (test/data/nccl-tests/*.csv by default; --csv adds
files of the same columns, e.g. new published rows) that a
shipped topology models (SYSTEMS below), this runs

    $GRADSYNC bench TOPOLOGY --op allreduce --algo auto --json ...

at every measured size (`--algo auto` runs what NCCL's tuner picks; a run that forced an
algorithm, NCCL_ALGO=RING or a named GTC bar, is compared with that algorithm) and prints
measured vs simulated time and busbw with their ratio (simulated / measured).

Size bands and what --assert requires (rows marked as known mismatches are shown and counted
apart, with their reason):
    latency   <= 64 KiB       every row's time within 2x of the measured time
    A         64 KiB - 1 MiB  busbw error per row within 35 %
    B         1 MiB - 64 MiB  busbw error per row within 30 %   (DDP buckets; protocol switches)
    C         >= 64 MiB       busbw error per row within 12 %
and, over the checked rows of bands A-C: the median |error| of each band <= 10 % (band A:
12 %, band C: 5 %, see BAND_MEDIAN_MAX), and each system's median |error| <= 20 %. (64 KiB rows are in the latency band and in band A.)
Held-out runs (systems marked heldout: rows that arrived after the defaults were set and were
never used to choose one) are summed and gated apart (HELDOUT_BAND_MEDIAN_MAX), so that the
figures on rows the model was not shaped on stay visible.
The summary prints the median and worst |error| per band and per system × band.

Rows left out (and said so): trust=low rows (misconfigured systems, data/README.md); CollNet
rows without NVLS (CollNetDirect / CollNetChain are not modelled; NVLS with InfiniBand SHARP
is); rows of systems no shipped topology models.

Python 3 standard library only. Usage:
    GRADSYNC=build/gradsync python3 test/validation/nccl_tests/compare_nccl_tests.py [--assert] [--csv FILE]...
"""

import argparse
import csv
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pylib"))
import gradsync_command as cli  # noqa: E402

ROOT = cli.SOURCE_DIR
DATA_GLOB = os.path.join(ROOT, "test", "data", "nccl-tests", "*.csv")

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
TIME_FACTOR = 2.0            # latency band: simulated / measured time within [1/2, 2]
LATENCY_MAX_BYTES = 64 * KiB
# (name, lowest size, highest size excluded, per-row |busbw error| tolerance)
BANDS = (("A", 64 * KiB, 1 * MiB, 0.35),
         ("B", 1 * MiB, 64 * MiB, 0.30),
         ("C", 64 * MiB, float("inf"), 0.12))
# Median |busbw error| allowed per band. The goal is 10 % in every band; band A is gated at
# 12 % until its EFA rows are modelled (11.0 % now: AWS-p4dex2 64-512 KiB run
# 16-33 % slower than gradsync's LL, see sim/fabric/README.md), so that it cannot get worse.
# Band C is gated at 5 % (2.3 % now; its worst checked row 10.4 %, under the 12 % per row), so
# that what it reached cannot slip back.
BAND_MEDIAN_MAX = {"A": 0.12, "B": 0.10, "C": 0.05}
SYSTEM_MEDIAN_MAX = 0.20
# The same for the held-out runs (SYSTEMS entries with heldout=True), which no default was
# chosen on: the goal, 10 % (band C: 5 %, as the shared rows). Now A 7.4 %, B 5.5 %, C 2.8 %;
# band B was 14.7 % before NVLSTree pipelined in NCCL's loops (nvls_tree_pipeline_steps).
HELDOUT_BAND_MEDIAN_MAX = {"A": 0.10, "B": 0.10, "C": 0.05}
PEAK_BYTES = 16 * GiB        # size simulated for rows that give only a peak busbw (the largest
                             # size of the file's sweeps, MLE-A100x8-*, AWS-p5x*-*)

# ---------------------------------------------------------------------------------------------
# Which shipped topology models which measured system. prefix: the row ids it answers for (a
# row belongs to the longest matching prefix). algo: what gradsync runs (auto = NCCL's tuner
# choice; else what the run forced). overrides: top-level YAML keys replaced for this
# comparison. peak_bytes: the size simulated for rows that give no size (default PEAK_BYTES).
# busbw_divisor: the row's busbw is per NIC, gradsync's per server. known: a documented
# mismatch (sim/fabric/README.md "Rows that contradict the defaults"): shown, not counted;
# known_sizes: the same for the rows in [lo, hi] bytes.
# Cluster b of NVIDIA/nccl-tests#309 from 4 servers: its plateau is not the hardware's.
CLUSTER_B_PLATEAU = ("cluster b from 4 servers: plateau 325 / 321 GB/s, 11-12 % under cluster "
                     "a's 4 servers (366) and NVIDIA's 370-380 GB/s for 32 GPUs")
SYSTEMS = [
    # One DGX-class A100 run (one process driving all 8 GPUs, -g 8, as its row notes say:
    # bench --gpus-per-thread 8, an iteration at least 8 host launches of 4.2 us) whose small
    # and mid sizes are slower than every other run of the file: 44 us at 32 KiB (8x H100,
    # AWS-p5x1, 19 us; gradsync 33.6 us, the harness's launches), rising to a flat 101 us from
    # 1 to 4 MiB (no latency-bandwidth model has a floor that grows with no size). From 16 to
    # 256 MiB its ring is 1.2-1.6x slower than gradsync's LL128/Simple ring (NCCL's own model
    # predicts what gradsync does there); from 512 MiB it is within 6 %. What slows A100 rings
    # at mid sizes is not modelled.
    dict(prefix="MLE-A100x8-", topology="dgx-a100.yaml", gpus_per_thread=8,
         known_sizes=[(64 * KiB, 4 * MiB, "this run's floor: 47 us at 64 KiB rising to a flat "
                                          "101 us at 1-4 MiB, 1.4-3x gradsync's -g 8 floor "
                                          "(8 x 4.2 us launches) and AWS-p5x1's 19-29 us"),
                      (16 * MiB, 256 * MiB, "A100 ring at mid sizes 1.2-1.6x slower than NCCL's "
                                            "own LL128/Simple model, which gradsync follows")]),
    dict(prefix="AWS-p5x1-", topology="aws-p5-1node.yaml"),
    dict(prefix="GH-nccl1161-H100PCIe-x2-", topology="h100-pcie-2gpu-nvlink-bridge.yaml",
         algo="ring",
         known="busbw 0.39 of the bridges' line rate, unexplained (h100-pcie-2gpu-nvlink-bridge.yaml)"),
    # EFA v1 from 2 to 16 MiB (Tree/Simple, NCCL's choice and the run's own shape): measured
    # 433 / 534 / 763 / 1192 us against 336 / 425 / 586 / 925 simulated, 1.25-1.3x throughout,
    # where the 2 GiB row that sets EFA's efficiency is within 2 % and 32 MiB within 2 %. NCCL's
    # own Tree model (its 0.92 share and size table, which gradsync charges) predicts what
    # gradsync does; a per-message cost through aws-ofi-nccl (~3.4 us per 512 KiB chunk per
    # NIC) would fit these rows but not the same run's Ring/LL rows. 8 MiB is the one beyond
    # the band's 30 %.
    dict(prefix="AWS-p4dex2-", topology="aws-p4de-2node-efa.yaml",
         known_sizes=[(8 * MiB, 8 * MiB, "Tree/Simple over EFA v1 at 2-16 MiB: measured 1.25-1.3x "
                                         "the model at every size (433 / 534 / 763 / 1192 us "
                                         "against 336 / 425 / 586 / 925), not modelled")]),
    dict(prefix="AWS-p5x2-", topology="aws-p5-2node-efa.yaml",
         known_sizes=[(64 * KiB, 64 * KiB, "LL over EFA: measured 94 -> 135 us out of place from "
                                           "16 to 64 KiB (82 -> 104 in place: this row is partly "
                                           "a spike), gradsync's Tree/LL 73 -> 80 (LL's per-byte "
                                           "cost across EFA is not modelled)"),
                      (256 * MiB, 256 * MiB, "the run's switch from Tree to NVLSTree: its 1468 us "
                                             "lies between gradsync's Tree (1801) and NVLSTree "
                                             "(1227)")]),
    dict(prefix="GH-nccltests119-A100-3n-", topology="a100-3node-4xhdr-ib.yaml"),
    dict(prefix="GH-nccltests252-H100-2x4-ring-", topology="hgx-h100-4gpu-2node-hdr-ib.yaml",
         algo="ring"),  # NCCL_ALGO=RING in the run; 4-GPU mesh, no NVSwitch
    # Held-out runs (heldout=True: gated apart, HELDOUT_BAND_MEDIAN_MAX), added after the
    # model's defaults were set and never used to choose one: multi-server H100 on 400G
    # InfiniBand, 8 GPUs and 8 NICs per server, NCCL's default algorithm
    # (nccl-tests-309.csv, NVIDIA/nccl-tests#309). Cluster a: 2 bare-metal Dell XE9680 and
    # 4 VMs, NCCL 2.26.2 (NVIDIA in the thread: "your numbers look good", "a good number");
    # cluster b: 2, 4 and 8 servers, NCCL version not shown.
    dict(prefix="GH-nccltests309-H100-2x8-a-", topology="dgx-h100-4node-ib.yaml",
         overrides={"nodes": 2}, heldout=True,
         known_sizes=[(8, 8, "the sweep's first row: 68.5 us out of place, 24.7 in place"),
                      (256, 256, "a spike: 94.4 us out of place, 25.9 in place, 25.7 at 128 B"),
                      (512 * KiB, 512 * KiB, "77.7 us, slower than this run's 1 MiB (71.9 us)")]),
    dict(prefix="GH-nccltests309-H100-4x8-a-", topology="dgx-h100-4node-ib.yaml", heldout=True,
         known_sizes=[(8, 8, "the sweep's first row: 83.4 us out of place, 34.8 in place"),
                      (256, 256, "a spike: 107.5 us out of place, 35.8 in place"),
                      (2 * MiB, 2 * MiB, "191.3 us out of place, 132.2 in place, 151.1 at 4 MiB")]),
    dict(prefix="GH-nccltests309-H100-2x8-b-", topology="dgx-h100-4node-ib.yaml",
         overrides={"nodes": 2}, heldout=True,
         known_sizes=[(1 * MiB, 1 * MiB, "93.3 us out of place, 83.0 in place, 94.2 at 2 MiB"),
                      (64 * MiB, 64 * MiB, "NVLSTree's chunk doubles to 128 KiB at 64 MiB: both "
                                           "clusters dip there (264 / 270 GB/s, +13 % over 32 "
                                           "MiB), gradsync's two-loop fill less (297)")]),
    # Cluster b from 4 servers plateaus at 325 / 321 GB/s, 11 % under cluster a's 4 servers
    # (366 GB/s) and NVIDIA's 370-380 GB/s for 32 GPUs (GTC-DGXH100-8x400G): its fabric, not
    # the hardware both clusters share, which is what the shipped topology describes. Below
    # 256 MiB its curve is checked like the others.
    dict(prefix="GH-nccltests309-H100-4x8-b-", topology="dgx-h100-4node-ib.yaml", heldout=True,
         known_sizes=[(1 * MiB, 4 * MiB, "this run's start: 317 / 227 / 231 us at 1 / 2 / 4 MiB "
                                         "out of place (93 / 156 in place), 239 us at 8 MiB"),
                      (256 * MiB, 16 * GiB, CLUSTER_B_PLATEAU)]),
    dict(prefix="GH-nccltests309-H100-8x8-b-", topology="dgx-h100-4node-ib.yaml",
         overrides={"nodes": 8}, heldout=True,
         known_sizes=[(8 * MiB, 8 * MiB, "a spike: 1272 us out of place, 321 in place"),
                      (256 * MiB, 16 * GiB, CLUSTER_B_PLATEAU)]),
    # Held out: InfiniBand SHARP through NCCL's CollNet plugin, NCCL_ALGO=COLLNETCHAIN forced
    # (coreweave/nccl-tests' H100 SHARP job; its README's sample ran 96 ranks, 12 servers of 8
    # H100 with 8 x 400G each). Nothing in gradsync was set from these rows: the chain's
    # per-GPU NVLink load (2S(ppn-1)/ppn each way, as a ring inside one server) bounds it.
    dict(prefix="GH-cwreadme-H100-12x8-collnetchain-", topology="dgx-h100-4node-ib.yaml",
         overrides={"nodes": 12, "network.sharp": "true"}, algo="collnetchain", heldout=True),
    # Held out (bands A-C): 4 x p5en.48xlarge, H200 on EFA v3, NCCL 2.30.4 with aws-ofi-nccl
    # (github.com/dailiuyao/ncclgauge-works). Each size is the run's 16-channel row of the
    # algorithm and protocol its TUNING lines show running there
    # (test/data/nccl-tests/tuning/ncclgauge-p5en-4x8.csv): aws-ofi-nccl's tuner regions for
    # p5en, which the topology's nccl.tuner rules restate (tuner_choices.py checks them and
    # NCCL's channels against that log). The topology's link latency was set from the 1 KiB row
    # (latency band), its efficiency is EFA v1's: nothing in bands A-C was fitted.
    dict(prefix="GH-ncclgauge-p5en-4x8-", topology="aws-p5en-4node-efa.yaml", heldout=True),
    # Plateau rows ("large-message plateau", reached from 32-128 MiB): simulated at 1 GiB.
    dict(prefix="GH-nccl209-GCP32GbE-2n1g", topology="gcp-v100-1gpu-2node-32gbps.yaml",
         peak_bytes=GiB),
    dict(prefix="GH-nccl209-GCP32GbE-4n1g", topology="gcp-v100-1gpu-2node-32gbps.yaml",
         peak_bytes=GiB, overrides={"nodes": 4}),
    dict(prefix="GH-nccl209-GCP32GbE-2n8g", topology="gcp-v100-8gpu-2node-32gbps.yaml",
         peak_bytes=GiB,
         known="host-limited TCP sockets (8 GPUs behind one socket NIC, NCCL 2.4.7's NSOCKS/NTHREADS)"),
    dict(prefix="GH-nccl209-GCP32GbE-4n8g", topology="gcp-v100-8gpu-2node-32gbps.yaml",
         peak_bytes=GiB, overrides={"nodes": 4},
         known="host-limited TCP sockets (8 GPUs behind one socket NIC, NCCL 2.4.7's NSOCKS/NTHREADS)"),
    # Held out: CoreWeave's 2-server base jobs (coreweave/nccl-tests#92, one busbw at 8 GiB
    # each, NCCL's default algorithm, 8 x 400G InfiniBand per server assumed in the row): the
    # shipped DGX H100 and DGX B200 servers, nothing set from these rows.
    dict(prefix="GH-cwnccltests92-h100-2x8-", topology="dgx-h100-4node-ib.yaml",
         overrides={"nodes": 2}, heldout=True),
    dict(prefix="GH-cwnccltests92-b200-2x8-", topology="dgx-b200-2node-ib.yaml", heldout=True),
    # Held out: one p4d.24xlarge (8 x A100 40 GB on NVSwitch, NVIDIA/nccl#527, 1 GiB): the
    # shipped p4de server alone (A100 80 GB, the same NVLink3 and NVSwitch), nothing set from it.
    dict(prefix="GH-nccl527-p4d-1x8-", topology="aws-p4de-2node-efa.yaml",
         overrides={"nodes": 1}, heldout=True),
    # Held out: 8 x RTX 5090 without P2P (NVIDIA/nccl#1639): the DRAM through which NCCL's SHM
    # transport stages every byte bounds the ring (the memory efficiency comes from STREAM, not
    # from these rows). Peaks of 1-8 GiB sweeps, simulated at 8 GiB.
    dict(prefix="GH-nccl1639-RTX5090x8", topology="rtx5090-8gpu-2s.yaml", heldout=True,
         peak_bytes=8 * GiB),
    dict(prefix="GH-nccl1639-RTX5090x4", topology="rtx5090-8gpu-2s.yaml", heldout=True,
         peak_bytes=8 * GiB, overrides={"node.gpus": 4, "node.sockets": 1},
         known="35 GB/s on 4 GPUs: a DRAM bound (307.2 x 0.75 / 8 = 28.8 on one socket) needs "
               "91 % of DDR5 peak, or GPUs on both sockets (48, PCIe-bound); which 4 ran is not "
               "stated, and last-level-cache hits (DDIO) are not modelled"),
    # NVIDIA's reference bars (GTC24 S62129 / GTC25 S72583 slide 12): large-message peaks.
    dict(prefix="GTC-V100-NVL2", topology="dgx1-v100.yaml", algo="ring"),
    dict(prefix="GTC-A100-NVL3", topology="dgx-a100.yaml", algo="ring"),
    dict(prefix="GTC-H100-NVLS", topology="dgx-h100.yaml", algo="nvls"),
    dict(prefix="GTC-B200-NVLS", topology="dgx-b200.yaml", algo="nvls"),
    dict(prefix="GTC-H100-NVL4", topology="dgx-h100.yaml", algo="ring"),
    dict(prefix="GTC-B200-NVL5", topology="dgx-b200.yaml", algo="ring"),
    dict(prefix="GTC-GB200-NVL72", topology="gb200-nvl72.yaml", algo="ring"),
    # NVLink SHARP over the 72-GPU domain (algorithm NVLS). Blackwell's NVLS factor is derived
    # from Hopper's and NCCL's nvlsEfficiency ratio, not fitted on this row or on GTC-B200-NVLS.
    dict(prefix="GTC-GB200-NVL72-SHARP", topology="gb200-nvl72.yaml", algo="nvls"),
    dict(prefix="GTC-PCIeGen4", topology="pcie-8gpu-gen4.yaml", algo="ring"),
    dict(prefix="GTC-PCIeGen5", topology="pcie-8gpu-gen5.yaml", algo="ring"),
    dict(prefix="GTC-DGXA100-8x200G", topology="dgx-a100-4node-hdr-ib.yaml"),
    # "Ring/NVLSTree" bar: 380 GB/s is both the Ring bound of 8 x 400G (x 0.95) and NVLSTree's
    # over more than 2 servers (an interior server's NIC carries twice its shard): auto.
    dict(prefix="GTC-DGXH100-8x400G", topology="dgx-h100-4node-ib.yaml"),
    # The same servers with InfiniBand SHARP ("CollNet/NVLS+SHARP"): the rail switches reduce
    # (network.sharp), and NCCL's tuner runs NVLS across the servers (auto).
    dict(prefix="GTC-DGXH100-8x400G-SHARP", topology="dgx-h100-4node-ib.yaml",
         overrides={"network.sharp": "true"}),
    # NVIDIA's per-GPU bars for one NIC type (GTC24/GTC25 slide 12): a ring across servers,
    # whose busbw is each GPU's NIC payload rate, on the shipped 8-GPU servers (per server / 8).
    # 2x200G: two NICs per GPU (16 x 200G on 8 H100), NCCL spreading a GPU's channels over
    # both; bound to one NIC it would read 24.
    dict(prefix="GTC-200G-RDMA", topology="dgx-a100-4node-hdr-ib.yaml", algo="ring",
         busbw_divisor=8),
    dict(prefix="GTC-400G-RDMA", topology="dgx-h100-4node-ib.yaml", algo="ring",
         busbw_divisor=8),
    dict(prefix="GTC-2x200G-RDMA", topology="dgx-h100-4node-ib.yaml", algo="ring",
         busbw_divisor=8, overrides={"node.nics": 16, "node.nic_bandwidth": "200Gbps"}),
    # This bar is per NIC (10 GB/s on one 100 GbE NIC); the topology has 8 NICs per server.
    # Host-limited: the Ethernet model's host cap (tcp_model.hpp, 10 GB/s per port) covers it.
    dict(prefix="GTC-100GbE-TCP", topology="eth-100gbe-4node.yaml", busbw_divisor=8),
]


# ---------------------------------------------------------------------------------------------
# Running gradsync.

class Gradsync:
    def __init__(self, exe, topo_dir, tmp_dir):
        self.exe = exe
        self.topo_dir = topo_dir
        self.tmp_dir = tmp_dir
        self.results = {}  # (system prefix, algo) -> {bytes: row}
        self.files = {}

    def topology(self, system):
        key = (system["topology"], json.dumps(system.get("overrides", {}), sort_keys=True))
        if key not in self.files:
            path = os.path.join(self.topo_dir, system["topology"])
            if system.get("overrides"):
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for k, v in system["overrides"].items():
                    if "." in k:  # section.key: set in a top-level block (replaced or added)
                        section, sub = k.split(".", 1)
                        block = re.search(rf"(?ms)^{re.escape(section)}:[ \t]*(#[^\n]*)?\n(.*?)(?=^\S|\Z)",
                                          text)
                        n = 0
                        if block:
                            body, count = re.subn(rf"(?m)^(  {re.escape(sub)}:)[^\n#]*",
                                                  rf"\g<1> {v} ", block.group(2), count=1)
                            if count:
                                text = text[:block.start(2)] + body + text[block.end(2):]
                                n = 1
                        if not n:
                            text, n = re.subn(rf"(?m)^({re.escape(section)}:[ \t]*(#[^\n]*)?\n)",
                                              rf"\g<1>  {sub}: {v}\n", text, count=1)
                    else:
                        text, n = re.subn(rf"(?m)^{re.escape(k)}:[^\n#]*", f"{k}: {v} ", text,
                                          count=1)
                    if n != 1:
                        raise RuntimeError(f"{path}: no top-level '{k.split('.')[0]}:' to override")
                name = "{}-{}.yaml".format(os.path.splitext(system["topology"])[0],
                                           "-".join(f"{k}{v}" for k, v in system["overrides"].items()))
                path = os.path.join(self.tmp_dir, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            self.files[key] = path
        return self.files[key]

    def bench(self, system, algo, sizes):
        """{bytes: bench row} for every size, in as few runs as possible: one run over a
        factor-2 series when the sizes lie on one, else one run per size."""
        sizes = sorted(set(int(s) for s in sizes))
        lo, hi = sizes[0], sizes[-1]
        series = []
        s = lo
        while s <= hi:
            series.append(s)
            s *= 2
        calls = [(lo, hi)] if set(sizes) <= set(series) and len(sizes) > 1 else [(s, s) for s in sizes]
        out = {}
        for a, b in calls:
            # CommandFailed (a RuntimeError) when it exits other than 0.
            harness = (["--gpus-per-thread", str(system["gpus_per_thread"])]
                       if system.get("gpus_per_thread") else [])
            rows = cli.bench_rows(self.topology(system), "--op", "allreduce", "--algo", algo,
                                  "--min", f"{a}B", "--max", f"{b}B", "--factor", "2",
                                  *harness, exe=self.exe, timeout=1800)
            for r in rows:
                out[int(round(r["bytes"]))] = r
        return out


# ---------------------------------------------------------------------------------------------

def band_of(nbytes):
    for name, lo, hi, _ in BANDS:
        if lo <= nbytes < hi:
            return name
    return None


def band_tolerance(name):
    return next(t for n, _, _, t in BANDS if n == name)


def ratio(a, b):
    return a / b if a and b else None


def fnum(v, width, prec=2):
    return f"{v:{width}.{prec}f}" if isinstance(v, (int, float)) and v is not None else f"{'-':>{width}}"


def fsize(n):
    for unit, s in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= s and n % s == 0:
            return f"{n // s}{unit}"
    return f"{n}B"


def system_of(row_id):
    best = None
    for s in SYSTEMS:
        if row_id.startswith(s["prefix"]) and (best is None or len(s["prefix"]) > len(best["prefix"])):
            best = s
    return best


def known_reason(system, nbytes):
    """Why this row is a documented mismatch (shown, not counted), or None."""
    if system.get("known"):
        return system["known"]
    for lo, hi, why in system.get("known_sizes", ()):
        if lo <= nbytes <= hi:
            return why
    return None


def skip_reason(row):
    notes = row["notes"].strip()
    if notes.startswith("trust=low"):
        return "trust=low"
    if row["collective"] != "all_reduce":
        return f"collective {row['collective']}"
    # InfiniBand SHARP (in-network reduction) is modelled for NVLS across servers and CollNet
    # (plan_nvls_sharp_allreduce, plan_collnet_*): such rows are checked against a topology with
    # network.sharp (SYSTEMS).
    return None


def read_rows(paths):
    """Rows of every file, the first file's row winning for a repeated id."""
    rows, seen = [], set()
    for path in paths:
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["id"] in seen:
                    continue
                seen.add(row["id"])
                rows.append(row)
    return rows


def median(values):
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gradsync", default=os.environ.get("GRADSYNC"),
                    help="gradsync executable (default: $GRADSYNC)")
    ap.add_argument("--csv", action="append", default=[],
                    help="more measured rows (repeatable; test/data/nccl-tests/*.csv always)")
    ap.add_argument("--topologies", default=os.path.join(ROOT, "topologies"))
    ap.add_argument("--only", action="append", default=[],
                    help="row-id prefix to keep (repeatable)")
    ap.add_argument("--assert", dest="do_assert", action="store_true",
                    help="exit 1 unless every requirement of the module docstring holds")
    ap.add_argument("--json", metavar="FILE", help="also write every row as JSON to FILE")
    args = ap.parse_args()
    if not args.gradsync:
        ap.error("set $GRADSYNC or pass --gradsync")
    paths = sorted(glob.glob(DATA_GLOB)) + [p for p in args.csv if os.path.exists(p)]
    rows = read_rows(paths)

    # Which rows to compare, grouped per (system, algorithm) so that one bench run covers them.
    selected, skipped = [], []
    for row in rows:
        rid = row["id"]
        if args.only and not any(rid.startswith(p) for p in args.only):
            continue
        reason = skip_reason(row)
        system = system_of(rid)
        if reason is None and system is None:
            reason = "no shipped topology models this system"
        if reason:
            skipped.append((rid, reason))
            continue
        nbytes = int(row["bytes"]) if row["bytes"].strip() else system.get("peak_bytes", PEAK_BYTES)
        selected.append((row, system, nbytes))

    out_rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="gradsync-v2-") as tmp:
        gs = Gradsync(args.gradsync, args.topologies, tmp)
        sims = {}
        groups = {}
        for row, system, nbytes in selected:
            groups.setdefault((system["prefix"], system.get("algo", "auto")), (system, []))[1].append(nbytes)
        for key, (system, sizes) in groups.items():
            try:
                sims[key] = gs.bench(system, key[1], sizes)
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                sims[key] = {"error": str(e)}
        current = None
        for row, system, nbytes in selected:
            rid = row["id"]
            key = (system["prefix"], system.get("algo", "auto"))
            if current != key[0]:
                current = key[0]
                print(f"\n## {key[0]}*  ->  topologies/{system['topology']}"
                      + (f" with {system['overrides']}" if system.get("overrides") else "")
                      + f"  (--algo {key[1]})"
                      + (f"\n#   KNOWN MISMATCH: {system['known']}" if system.get("known") else "")
                      + "".join(f"\n#   KNOWN MISMATCH {fsize(lo)}..{fsize(hi)}: {why}"
                                for lo, hi, why in system.get("known_sizes", ())))
                print(f"{'id':<40} {'size':>8} | {'meas us':>9} {'gs us':>9} {'t x':>6} | "
                      f"{'meas bw':>8} {'gs bw':>8} {'bw x':>6} | {'gs algo':<16} {'band':<4} {'check':<5}")
            meas_t = float(row["measured_time_us"]) if row["measured_time_us"].strip() else None
            meas_bw = float(row["measured_busbw_GBps"]) if row["measured_busbw_GBps"].strip() else None
            known = known_reason(system, nbytes)
            sim = sims[key]
            r = sim.get(nbytes) if "error" not in sim else None
            gs_t = r["time_us"] if r else None
            gs_bw = r["busbw_GBps"] / system.get("busbw_divisor", 1) if r else None
            gs_algo = (r["algorithm"] + ("/" + r["protocol"] if r.get("protocol") else "")) if r else "ERROR"
            band = band_of(nbytes)
            checks = []  # (kind, ok)
            if nbytes <= LATENCY_MAX_BYTES and meas_t:
                t_ratio = ratio(gs_t, meas_t)
                checks.append(("time", t_ratio is not None and 1 / TIME_FACTOR <= t_ratio <= TIME_FACTOR))
            bw_err = None
            if band and meas_bw:
                bw_ratio = ratio(gs_bw, meas_bw)
                bw_err = abs(bw_ratio - 1.0) if bw_ratio is not None else None
                checks.append(("busbw", bw_err is not None and bw_err <= band_tolerance(band)))
            ok = all(c[1] for c in checks) if checks else None
            verdict = "-" if ok is None else ("xpass" if ok else "xfail") if known else ("PASS" if ok else "FAIL")
            if ok is False and not known:
                failures.append(f"{rid}: {'/'.join(k for k, v in checks if not v)} outside its tolerance")
            print(f"{rid:<40} {fsize(nbytes):>8} | {fnum(meas_t, 9)} {fnum(gs_t, 9)} "
                  f"{fnum(ratio(gs_t, meas_t), 6)} | {fnum(meas_bw, 8)} {fnum(gs_bw, 8)} "
                  f"{fnum(ratio(gs_bw, meas_bw), 6)} | {gs_algo:<16} {band or 'lat':<4} {verdict:<5}",
                  flush=True)
            out_rows.append(dict(id=rid, bytes=nbytes, system=system["prefix"], band=band,
                                 topology=system["topology"], measured_time_us=meas_t,
                                 measured_busbw_GBps=meas_bw, gradsync_time_us=gs_t,
                                 gradsync_busbw_GBps=gs_bw, gradsync_algorithm=gs_algo,
                                 busbw_error=bw_err, known_mismatch=known, ok=ok,
                                 heldout=bool(system.get("heldout")),
                                 error=sim.get("error") if "error" in sim else None))

    if skipped:
        print("\n# skipped rows")
        for rid, why in skipped:
            print(f"#   {rid}: {why}")

    # Summary: |busbw error| per band and per system x band, checked rows only; the
    # held-out rows apart, each set against its own band gates.
    counted = [r for r in out_rows if r["band"] and r["busbw_error"] is not None and not r["known_mismatch"]]
    for heldout, limits in ((False, BAND_MEDIAN_MAX), (True, HELDOUT_BAND_MEDIAN_MAX)):
        mine = [r for r in counted if r["heldout"] == heldout]
        if not mine:
            continue
        print("\n# |busbw error| of the checked rows (known mismatches apart), per band"
              + (": held-out runs" if heldout else ""))
        print(f"# {'band':<22} {'rows':>5} {'median':>8} {'worst':>8}  worst row")
        for name, lo, hi, tol in BANDS:
            errs = sorted(((r["busbw_error"], r["id"]) for r in mine if r["band"] == name),
                          reverse=True)
            med = median([e for e, _ in errs])
            label = f"{name} {fsize(lo)}-{fsize(hi) if hi != float('inf') else ''}"
            print(f"# {label:<22} {len(errs):>5} {fnum(med and med * 100, 7, 1)}% "
                  f"{fnum(errs[0][0] * 100 if errs else None, 7, 1)}%  {errs[0][1] if errs else ''}")
            if med is not None and med > limits[name]:
                failures.append(f"band {name}{' (held-out)' if heldout else ''}: median |busbw "
                                f"error| {med:.1%} > {limits[name]:.0%}")
    print(f"\n# per system: median |busbw error| (rows) per band, and over bands A-C")
    print(f"# {'system':<34} " + " ".join(f"{n:>12}" for n, _, _, _ in BANDS) + f" {'all':>12}")
    for s in SYSTEMS:
        mine = [r for r in counted if r["system"] == s["prefix"]]
        if not mine:
            continue
        cells = []
        for name, _, _, _ in BANDS:
            e = [r["busbw_error"] for r in mine if r["band"] == name]
            cells.append(f"{fnum(median(e) and median(e) * 100, 6, 1)}% ({len(e):>2})" if e else f"{'-':>12}")
        med = median([r["busbw_error"] for r in mine])
        print(f"# {s['prefix']:<34} " + " ".join(cells) + f" {med * 100:>6.1f}% ({len(mine):>2})")
        if med > SYSTEM_MEDIAN_MAX:
            failures.append(f"system {s['prefix']}: median |busbw error| {med:.1%} > {SYSTEM_MEDIAN_MAX:.0%}")
    known_rows = [r for r in out_rows if r["known_mismatch"] and r["ok"] is not None]
    print(f"\n# known mismatches: {sum(1 for r in known_rows if not r['ok'])} xfail, "
          f"{sum(1 for r in known_rows if r['ok'])} xpass")
    checked = [r for r in out_rows if r["ok"] is not None and not r["known_mismatch"]]
    print(f"{sum(1 for r in checked if r['ok'])} passed, {sum(1 for r in checked if not r['ok'])} failed")
    for f in failures:
        print(f"FAIL: {f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"rows": out_rows, "skipped": [dict(id=i, reason=w) for i, w in skipped],
                       "failures": failures}, f, indent=1)
    return 1 if args.do_assert and failures else 0


if __name__ == "__main__":
    sys.exit(main())
