#!/usr/bin/env python3
"""Ring AllReduce under one PCIe switch, with and without peer to peer (Device::p2p).

Usage: GRADSYNC=path/to/gradsync pcie_p2p_bench_test.py P2P_TOPOLOGY NO_P2P_TOPOLOGY

Both topologies are one server of n GPUs under one PCIe switch whose uplink goes to the CPU,
every link B per direction (efficiency 1, software: none). The ring i -> i+1 sends one flow
per direction over each GPU link. With P2P every hop turns inside the switch and the uplink
carries nothing; without P2P every hop goes GPU -> switch -> CPU -> switch -> GPU, so the
uplink carries all n hops in each direction. Ring busbw = min over links of effective
bandwidth / flows on the link per direction:

    P2P:    busbw = B
    no P2P: busbw = min(B / 1, B / n) = B / n

Asserted within 2 % at 1 GiB, in both fidelities (flow: SimGrid max-min; step: the
per-step model), so that a router that ignored p2p, or one that sent traffic up but not back
through the same uplink, fails.
"""
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

TOLERANCE = 0.02
UNITS = {"GB/s": 1e9, "MB/s": 1e6, "Gbps": 1e9 / 8}


def rate(text):
    m = re.fullmatch(r"([0-9.]+)\s*(GB/s|MB/s|Gbps)", str(text))
    assert m, f"unsupported rate {text!r}"
    return float(m.group(1)) * UNITS[m.group(2)]


def closed_form(path):
    spec = yaml.safe_load(open(path))
    intra = spec["node"]["intra"]
    assert intra["fabric"] == "pcie" and intra["switch"] is True, path
    assert spec.get("software") == "none" and float(intra.get("efficiency", 0)) == 1.0, path
    assert spec.get("nodes", 1) == 1 and spec["node"].get("sockets", 1) == 1, path
    n = int(spec["node"]["gpus"])
    b = rate(intra["bandwidth"])
    gpu_link_flows = 1
    uplink_flows = 0 if intra.get("p2p", True) else n
    return min(b / gpu_link_flows, b / uplink_flows if uplink_flows else float("inf")), n


def busbw(gradsync, path, fidelity):
    rows = cli.bench_rows(path, "--algo", "ring", "--min", "1GiB", "--max", "1GiB", "--fidelity",
                          fidelity, exe=gradsync)
    assert len(rows) == 1, rows
    return rows[0]["busbw_GBps"] * 1e9


def main():
    gradsync = cli.executable("gradsync")
    ok = True
    figures = {}
    forms = {}
    for path in sys.argv[1:3]:
        expected, _ = closed_form(path)
        forms[path] = expected
        for fidelity in ("flow", "step"):
            got = busbw(gradsync, path, fidelity)
            figures[(path, fidelity)] = got
            err = got / expected - 1.0
            verdict = "ok" if abs(err) <= TOLERANCE else "FAIL"
            print(f"{os.path.basename(path)} {fidelity}: busbw {got / 1e9:.3f} GB/s, closed form "
                  f"{expected / 1e9:.3f} GB/s ({err:+.2%}) {verdict}")
            ok &= abs(err) <= TOLERANCE
    for fidelity in ("flow", "step"):
        ratio = figures[(sys.argv[1], fidelity)] / figures[(sys.argv[2], fidelity)]
        expected_ratio = forms[sys.argv[1]] / forms[sys.argv[2]]
        print(f"{fidelity}: P2P / no P2P = {ratio:.3f} (closed form {expected_ratio:.3f})")
        ok &= abs(ratio / expected_ratio - 1.0) <= TOLERANCE
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
