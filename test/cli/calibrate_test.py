#!/usr/bin/env python3
"""`gradsync calibrate` end to end on synthetic nccl-tests logs made by gradsync itself.

A "truth" topology is the shipped template with known, non-default parameters; `gradsync bench
--json` on it gives the rows, formatted here exactly like all_reduce_perf prints them (rank
lines, out-of-place and in-place columns, two runs concatenated, an NCCL INFO line, the Avg bus
bandwidth trailer). Calibrating the shipped template against that log must recover the
parameters (efficiency within 2 %, latency within 20 %), reproduce sizes >= 1 MiB within 5 %,
write a topology that `bench` reproduces, and predict another node count. Bad logs exit 2 with
LOG:line:col.

usage: GRADSYNC=path/to/gradsync calibrate_test.py CASE SOURCE_DIR
  CASE: multinode | singlenode | bad_log | real_log | format (print a log: format TOPO [bench args...])
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

bench = cli.bench_rows


def fmt_time(us):
    # nccl-tests' precision: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def nccl_tests_log(rows, ranks, nodes, device="NVIDIA H100 80GB HBM3", runs=(1.01, 0.99)):
    """rows: dicts with bytes, time_us (bench --json). One run per factor in `runs`."""
    per_node = ranks // nodes
    out = []
    sizes = [int(r["bytes"]) for r in rows]
    for k, scale in enumerate(runs):
        out.append(f"# nThread 1 nGpus 1 minBytes {sizes[0]} maxBytes {sizes[-1]} step: 4(factor) "
                   "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0")
        out.append("#")
        out.append("# Using devices")
        for r in range(ranks):
            out.append(f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on   node-{r // per_node:02d} "
                       f"device {r % per_node:2d} [0x{0x18 + 16 * (r % per_node):02x}] {device}")
        if k == 0:
            out.append("node-00:4000:4000 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>")
        out.append("#")
        out.append("#                                                              out-of-place"
                   "                       in-place          ")
        out.append("#       size         count      type   redop    root     time   algbw   busbw"
                   " #wrong     time   algbw   busbw #wrong")
        out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
                   "            (us)  (GB/s)  (GB/s)       ")
        total = 0.0
        for r in rows:
            b = int(r["bytes"])
            t = r["time_us"] * scale
            alg = b / (t * 1e-6) / 1e9
            bus = alg * 2 * (ranks - 1) / ranks
            tin = t * 1.002
            alg_in = b / (tin * 1e-6) / 1e9
            bus_in = alg_in * 2 * (ranks - 1) / ranks
            total += bus
            out.append(f"{b:12d}  {b // 4:12d}     float     sum      -1  {fmt_time(t)} "
                       f"{alg:7.2f} {bus:7.2f}      0  {fmt_time(tin)} {alg_in:7.2f} {bus_in:7.2f}"
                       "      0")
        out.append("# Out of bounds values : 0 OK")
        out.append(f"# Avg bus bandwidth    : {total / len(rows):.4f} ")
        out.append("#")
        out.append("")
    return "\n".join(out)


def set_key(text, block, key, value):
    """Sets `key: value` in the top-level block mapping `block` (network) or node.intra."""
    lines = text.split("\n")
    if block == "network":
        start = next(i for i, l in enumerate(lines) if l.startswith("network:"))
        indent = "  "
    else:  # node.intra (block form)
        node = next(i for i, l in enumerate(lines) if l.startswith("node:"))
        start = next(i for i in range(node, len(lines)) if lines[i].startswith("  intra:"))
        indent = "    "
    end = start + 1
    while end < len(lines) and (lines[end].startswith(indent) or not lines[end].strip()):
        end += 1
    for i in range(start + 1, end):
        if lines[i].startswith(indent + key + ":"):
            lines[i] = f"{indent}{key}: {value}"
            return "\n".join(lines)
    lines.insert(start + 1, f"{indent}{key}: {value}")
    return "\n".join(lines)


# Each check needs the ones before it: the first failure ends the case.
check = cli.Checks().require


def synthetic(src, topo_name, block, lat_key, eff, lat_s, lat_text, other_nodes):
    base = os.path.join(src, "topologies", topo_name)
    text = open(base).read()
    truth = set_key(set_key(text, block, "efficiency", str(eff)), block, lat_key, lat_text)
    with tempfile.TemporaryDirectory() as d:
        tpath = os.path.join(d, "truth.yaml")
        open(tpath, "w").write(truth)
        rows = bench(tpath, "-b", "16B", "-e", "1GiB", "-f", "4", "--algo", "auto")
        ranks = int(rows[0]["ranks"])
        nodes = int(re.search(r"^nodes:\s*(\d+)", truth, re.M).group(1))
        log = os.path.join(d, "all_reduce_perf.log")
        open(log, "w").write(nccl_tests_log(rows, ranks, nodes))
        out = os.path.join(d, "calibrated.yaml")
        p = cli.run("calibrate", base, "--nccl-tests", log, "-o", out, "--json")
        check(p.returncode == 0, f"calibrate exits 0 (stderr: {p.stderr.strip()})")
        j = json.loads(p.stdout)
        fe = j["parameters"]["efficiency"]["fitted"]
        fl = j["parameters"]["latency"]["fitted_s"]
        print(f"recovered {j['group']}.efficiency {fe:.4f} (truth {eff}), "
              f"{j['parameters']['latency']['key']} {fl * 1e6:.3f} us (truth {lat_s * 1e6} us); "
              f"{j['iterations']} updates, {j['simulations']} simulations")
        for r in j["rows"]:
            print(f"  {int(r['bytes']):>11d} B  measured {r['measured_time_us']:10.2f} us  "
                  f"simulated {r['simulated_time_us']:10.2f} us  {100 * r['error']:+6.2f} %")
        check(abs(fe / eff - 1) <= 0.02, f"efficiency {fe:.4f} within 2 % of {eff}")
        check(abs(fl / lat_s - 1) <= 0.20, f"latency {fl * 1e6:.3f} us within 20 % of {lat_s * 1e6} us")
        check(j["within_5pct_ge_1MiB"] and j["max_abs_error_ge_1MiB"] <= 0.05,
              f"sizes >= 1 MiB within 5 % (max {100 * j['max_abs_error_ge_1MiB']:.2f} %)")
        written = open(out).read()
        check("calibrated from nccl-tests log" in written and written.startswith("# Calibrated by"),
              "the written topology says where its values came from")
        # bench on the written file reproduces the log
        again = bench(out, "-b", "1MiB", "-e", "1GiB", "-f", "4", "--algo", "auto")
        meas = {int(r["bytes"]): r["time_us"] for r in rows}
        worst = max(abs(r["time_us"] / meas[int(r["bytes"])] - 1) for r in again)
        check(worst <= 0.05, f"bench on the calibrated file: sizes >= 1 MiB within 5 % ({100 * worst:.2f} %)")
        if other_nodes:
            # The calibrated topology predicts another node count like the truth does.
            t2 = os.path.join(d, "truth2.yaml")
            c2 = os.path.join(d, "cal2.yaml")
            open(t2, "w").write(re.sub(r"^nodes:\s*\d+", f"nodes: {other_nodes}", truth, flags=re.M))
            open(c2, "w").write(re.sub(r"^nodes:\s*\d+", f"nodes: {other_nodes}", written, flags=re.M))
            a = bench(t2, "-b", "1MiB", "-e", "1GiB", "-f", "4")
            b = bench(c2, "-b", "1MiB", "-e", "1GiB", "-f", "4")
            worst = max(abs(y["time_us"] / x["time_us"] - 1) for x, y in zip(a, b))
            check(worst <= 0.05, f"{other_nodes} nodes: calibrated vs truth within 5 % ({100 * worst:.2f} %)")


def bad_log(src):
    base = os.path.join(src, "topologies", "dgx-h100.yaml")
    cases = [
        ("#  Rank  0 Group  0 Pid 1 on a device 0 [0x18] GPU\n"
         "#       size  count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
         "        1024    256 float  sum   -1 10.0  0.10  0.18      0 10.1  0.10  0.18      0\n"
         "        2048    512 float  sum   -1 abc  0.10  0.18      0 10.1  0.10  0.18      0\n", 4, 37),
        ("hello world\n", 1, 1),
        ("# only comments\n", 1, 1),
        ("        1024    256 float  sum   -1 10.0  0.10\n", 1, 47),
    ]
    with tempfile.TemporaryDirectory() as d:
        for text, line, col in cases:
            log = os.path.join(d, "bad.log")
            open(log, "w").write(text)
            p = cli.run("calibrate", base, "--nccl-tests", log)
            msg = p.stderr.strip()
            check(p.returncode == 2 and msg.count("\n") == 0 and
                  msg.startswith(f"{log}:{line}:{col}: error: "),
                  f"bad log exits 2 at {line}:{col}: {msg}")


def real_log(src):
    """A published all_reduce_perf log (examples/nccl-tests): bench --compare prints every row;
    calibrate reports every band, makes none worse, says why a band misses the promise, and
    marks a forced fit that stays off. A synthetic alpha-beta log is far off: exit 3, nothing
    written."""
    topo = os.path.join(src, "topologies", "aws-p5-2node-efa.yaml")
    log = os.path.join(src, "examples", "nccl-tests", "aws-p5-2node-efa.log")
    p = cli.run("bench", topo, "--compare", log, "--json")
    check(p.returncode == 0, f"bench --compare on the example log exits 0 ({p.stderr.strip()})")
    j = json.loads(p.stdout)
    rows = j["rows"] if isinstance(j, dict) else j
    check(len(rows) == 32, f"bench --compare: 32 rows, 8 B .. 16 GiB ({len(rows)})")
    by = {int(r["bytes"]): r for r in rows}
    check(abs(by[1073741824]["measured_time_us"] - 4607.6) < 1e-6, "measured time read verbatim (1 GiB: 4607.6 us)")
    with tempfile.TemporaryDirectory() as d:
        # One fit of the real log (few iterations: this case also runs under the sanitizers),
        # with --force so that it is written whatever it reaches.
        out = os.path.join(d, "calibrated.yaml")
        p = cli.run("calibrate", topo, "--nccl-tests", log, "-o", out, "--json", "--force",
                    "--iterations", "2")
        check(p.returncode == 0 and os.path.exists(out),
              f"calibrate --force on the example log exits 0 and writes ({p.stderr.strip()})")
        j = json.loads(p.stdout)
        check(set(b["band"] for b in j["bands"]) == {"latency", "A", "B", "C"},
              "the report covers every band of the log")
        for b in j["bands"]:
            check(b["median_abs_error"] <= b["median_abs_error_before"] + 0.005,
                  f"band {b['band']}: median |error| {100 * b['median_abs_error']:.1f} % not worse "
                  f"than uncalibrated {100 * b['median_abs_error_before']:.1f} %")
            if not b["within_promise"]:
                check(any(n.startswith(f"band {b['band']} ") and "misses the promise" in n
                          for n in j["notes"]), f"band {b['band']} misses: a note says why")
        written = open(out).read()
        if not j["ok"]:
            check("written with --force" in written and "written anyway" in p.stderr,
                  "a forced fit that stays off says so, in the file and on stderr")
        # A synthetic alpha-beta log (50 us + S / 10 GB/s) is not a GPU server at all: far off,
        # exit 3 with one line, nothing written.
        rows = [{"bytes": s, "time_us": 50.0 + s / 1e4} for s in [2 ** k for k in range(4, 31, 2)]]
        ab = os.path.join(d, "alpha_beta.log")
        open(ab, "w").write(nccl_tests_log(rows, 8, 1))
        ab_out = os.path.join(d, "ab.yaml")
        p = cli.run("calibrate", os.path.join(src, "topologies", "dgx-h100.yaml"), "--nccl-tests",
                    ab, "-o", ab_out)
        err = p.stderr.strip()
        check(p.returncode == 3 and err.count("\n") == 0 and "the fit stays off" in err,
              f"an alpha-beta log against dgx-h100 exits 3 with one line: {err}")
        check(not os.path.exists(ab_out), "and writes nothing")
        check("misses the promise" in p.stdout, "the report names the bands that miss")

def main():
    case, src = sys.argv[1], sys.argv[2]
    if case == "multinode":
        synthetic(src, "dgx-h100-4node-ib.yaml", "network", "link_latency", 0.8, 3e-6, "3us", 2)
    elif case == "singlenode":
        synthetic(src, "dgx-h100.yaml", "node.intra", "latency", 0.7, 1e-6, "1us", None)
    elif case == "bad_log":
        bad_log(src)
    elif case == "real_log":
        real_log(src)
    elif case == "format":
        rows = bench(sys.argv[3], *sys.argv[4:])
        print(nccl_tests_log(rows, int(rows[0]["ranks"]), 1))
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
