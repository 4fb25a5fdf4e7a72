#!/usr/bin/env python3
"""`gradsync bench TOPOLOGY --algo nvls` lands on the measured NVLS bus bandwidth.

Usage: GRADSYNC=path/to/gradsync nvls_bench_test.py TOPOLOGY [EXPECTED_GBPS [TOLERANCE]]

Runs one 1 GiB AllReduce with NVLink SHARP and asserts busbw within TOLERANCE (default 0.15)
of EXPECTED_GBPS (default 480: data/nccl-tests-public.csv row GTC-H100-NVLS, 8x H100, NVIDIA
GTC24 S62129 / GTC25 S72583 slide 12). Also checks that NVLS beats ring on the same server
(GTC-H100-NVL4: ring 370 GB/s) and that a topology without an NVSwitch is refused (exit 2).
"""
import os
import pathlib
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402


def bench(gradsync, topology, algo, size="1GiB"):
    rows = cli.bench_rows(topology, "--algo", algo, "--min", size, "--max", size, exe=gradsync)
    assert len(rows) == 1, rows
    return rows[0]


def main():
    gradsync = cli.executable("gradsync")
    topology = sys.argv[1]
    expected = float(sys.argv[2]) if len(sys.argv) > 2 else 480.0
    tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    nvls = bench(gradsync, topology, "nvls")
    ring = bench(gradsync, topology, "ring")
    print(f"nvls 1 GiB: {nvls['time_us']:.1f} us, busbw {nvls['busbw_GBps']:.1f} GB/s "
          f"(expected {expected} +-{tolerance:.0%}); ring busbw {ring['busbw_GBps']:.1f} GB/s")
    ok = True
    if nvls["algorithm"] != "nvls":
        print(f"FAIL: algorithm {nvls['algorithm']!r}, expected 'nvls'")
        ok = False
    if abs(nvls["busbw_GBps"] - expected) > tolerance * expected:
        print("FAIL: NVLS busbw outside the tolerance")
        ok = False
    if not nvls["busbw_GBps"] > ring["busbw_GBps"]:
        print("FAIL: NVLS should beat ring on an NVSwitch server")
        ok = False
    # No NVSwitch (PCIe server): --algo nvls is bad input, exit 2 with a reason.
    pcie = pathlib.Path(topology).parent / "pcie-4gpu.yaml"
    if pcie.exists():
        r = cli.run("bench", pcie, "--algo", "nvls", "--min", "1MiB", "--max", "1MiB", exe=gradsync)
        if r.returncode != 2 or "NVSwitch" not in r.stderr:
            print(f"FAIL: nvls on {pcie.name}: exit {r.returncode}, stderr {r.stderr!r}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
