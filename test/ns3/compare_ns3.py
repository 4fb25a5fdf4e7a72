#!/usr/bin/env python3
"""V3 of the validation ladder (DESIGN.md §7): gradsync's Ethernet (TCP) flow model against
ns-3's packet-level TCP on the same graph and traffic.

Each case runs test/ns3/tcp_incast_leafspine (ns-3 3.37) for a few back-to-back rounds on
persistent connections, and the matching `gradsync bench` command on a topology in
test/data/tcp/. ns-3 rounds that hit a retransmission timeout (incast collapse, RTO_min 200 ms)
are printed next to the closed form n·S/C + RTO_min (REFERENCES.md §5); the assertion compares
gradsync with ns-3's fastest round (the flow model's steady state: no timeout): within --tolerance.

Usage: compare_ns3.py NS3_PROGRAM GRADSYNC SOURCE_DIR [--tolerance 0.15]
Exit: 0 every case within tolerance, 1 a case is not, 2 bad usage.
"""
import argparse
import json
import subprocess
import sys

# name, ns-3 arguments, gradsync bench arguments (topology relative to the source dir), rounds
CASES = [
    ("incast 8-to-1, 8 MiB per worker (parameter server, 1 switch)",
     ["--pattern=ps", "--workers=8", "--bytes=8388608"],
     ["test/data/tcp/ns3_incast_star.yaml", "--op", "allreduce", "--algo", "ps",
      "--ps-placement", "dedicated", "--min", "8MiB", "--max", "8MiB"]),
    ("leaf-spine 2:1, ring AllReduce 32 MiB over 4 hosts, every edge across the spine",
     ["--pattern=ring", "--hosts-per-leaf=2", "--oversubscription=2", "--bytes=33554432"],
     ["test/data/tcp/ns3_leafspine_2to1.yaml", "--op", "allreduce", "--algo", "ring",
      "--channels", "1", "--pipeline", "1", "--fidelity", "step", "--min", "32MiB",
      "--max", "32MiB"]),
]
RTO_MIN_S = 0.2  # gradsync's default rto_min (tcp_model.hpp) and the ns-3 program's


def run_ns3(program, args, rounds):
    out = subprocess.run([program, *args, f"--rounds={rounds}",
                          "--ns3::TcpSocket::DelAckTimeout=40ms"],
                         capture_output=True, text=True, check=True).stdout
    return [float(line.split()[3]) for line in out.splitlines() if line.startswith("round ")]


def run_gradsync(gradsync, source_dir, args):
    topo, *rest = args
    out = subprocess.run([gradsync, "bench", f"{source_dir}/{topo}", *rest, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["time_us"] * 1e-6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ns3_program")
    ap.add_argument("gradsync")
    ap.add_argument("source_dir")
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--rounds", type=int, default=3)
    o = ap.parse_args()
    ok = True
    for name, ns3_args, gs_args in CASES:
        rounds = run_ns3(o.ns3_program, ns3_args, o.rounds)
        gs = run_gradsync(o.gradsync, o.source_dir, gs_args)
        best = min(rounds)
        apart = gs / best - 1.0
        verdict = "PASS" if abs(apart) <= o.tolerance else "FAIL"
        ok = ok and verdict == "PASS"
        print(f"{name}\n  ns-3 rounds (s): {' '.join(f'{r:.4f}' for r in rounds)}\n"
              f"  gradsync {gs:.4f} s vs ns-3 fastest round {best:.4f} s: {apart:+.1%} {verdict}")
        for r in rounds:
            if r > best + 0.5 * RTO_MIN_S:
                print(f"  ns-3 round {r:.4f} s hit a timeout: gradsync + RTO_min = "
                      f"{gs + RTO_MIN_S:.4f} s ({(gs + RTO_MIN_S) / r - 1.0:+.1%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
