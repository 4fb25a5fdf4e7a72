#!/usr/bin/env python3
"""Invariants of `gradsync bench` on shipped topologies: answers that must hold whatever the
model's constants, because the hardware they describe says so. Each caught a real bug:

  - a non-blocking fat tree with adaptive routing carries a ring as one switch does, with and
    without GPU <-> NIC P2P (4 and 16 DGX H100 servers, 4 GiB, within 3 %: the fat tree's
    extra hops cost latency only). Without P2P, shortest paths between two NICs entered the
    destination server through its other NIC on a shared edge switch: 94 GB/s against 185;
  - doubling every NIC's rate never lowers busbw (ring and tree, 1 GiB, within 1 %; not
    `auto`, which runs NCCL's choice, and NCCL may choose worse at the higher rate);
  - GPU <-> NIC P2P switched off never makes a collective faster (auto, within 1 %);
  - a tree over 100 GbE Ethernet is within 2x of the ring: TCP incast charged a tree's
    two-child fan-in 200 ms (0.11x), and at 200 GbE `auto` then chose NVLSTree at 27 GB/s
    against the ring's 80.

Usage: GRADSYNC=/path/to/gradsync invariants_bench_test.py SOURCE_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

check = cli.Checks()


def busbw(source, topology, *args, sets=()):
    extra = [x for s in sets for x in ("--set", s)]
    rows = cli.bench_rows(os.path.join(source, "topologies", topology), *extra, *args)
    return rows[0]["busbw_GBps"]


def main():
    source = sys.argv[1]
    fat_tree = "dgx-h100-32node-fat-tree-ib.yaml"
    for nodes in (4, 16):
        for p2p in ("true", "false"):
            sets = (f"nodes={nodes}", f"node.pcie.p2p={p2p}")
            args = ("--algo", "ring", "--min", "4GiB", "--max", "4GiB")
            tree = busbw(source, fat_tree, *args, sets=sets)
            one = busbw(source, fat_tree, *args, sets=sets + ("network.shape=single-switch",))
            check(abs(tree / one - 1.0) <= 0.03,
                  f"fat tree = one switch, {nodes} servers, P2P {p2p}: ring 4 GiB {tree:.1f} vs "
                  f"{one:.1f} GB/s")
    doubled = {"dgx-h100-4node-ib.yaml": "800Gbps", "eth-100gbe-4node.yaml": "200Gbps",
               "roce-16node-leaf-spine.yaml": "400Gbps", "aws-p5-2node-efa.yaml": "800Gbps"}
    for topology, rate in doubled.items():
        for algo in ("ring", "tree"):
            args = ("--algo", algo, "--min", "1GiB", "--max", "1GiB")
            base = busbw(source, topology, *args)
            up = busbw(source, topology, *args, sets=(f"node.nic_bandwidth={rate}",))
            check(up >= 0.99 * base, f"{topology}: {algo} with NICs at {rate} {up:.1f} >= "
                  f"{base:.1f} GB/s")
        args = ("--algo", "auto", "--min", "1GiB", "--max", "1GiB")
        base = busbw(source, topology, *args)
        no_p2p = busbw(source, topology, *args, sets=("node.pcie.p2p=false",))
        check(no_p2p <= 1.01 * base, f"{topology}: without GPU-NIC P2P {no_p2p:.1f} <= "
              f"{base:.1f} GB/s")
    ring = busbw(source, "eth-100gbe-4node.yaml", "--algo", "ring", "--min", "1GiB",
                 "--max", "1GiB")
    tree = busbw(source, "eth-100gbe-4node.yaml", "--algo", "tree", "--min", "1GiB",
                 "--max", "1GiB")
    check(tree >= 0.5 * ring, f"tree over 100 GbE {tree:.1f} within 2x of the ring {ring:.1f} GB/s")
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
