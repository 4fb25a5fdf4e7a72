#!/usr/bin/env python3
"""V2, what runs per size: `bench --algo auto` against a real job's NCCL_DEBUG TUNING lines.

A job's NCCL_DEBUG=INFO TUNING lines say, for every collective, the algorithm, the protocol and
the channels it ran. test/data/nccl-tests/tuning/*.csv hold such tables, one row per message
size: what ran unforced, and the channels NCCL ran when NCCL_ALGO / NCCL_PROTO forced each
algorithm and protocol. Per table and communicator layout, gradsync must run the same at every
size, save the differences listed in `known` with their reason:
- the channels come from gradsync's restatement of NCCL (its graph search and enqueue.cc's
  trimming by size, sim/fabric/nccl_tuner.cpp), set from no row of these tables;
- the algorithm and protocol, where a tuner plugin chose them (aws-ofi-nccl's regions on
  p5en), come from the topology's `nccl.tuner` rules, which restate the plugin's source: the
  check is that the restatement matches what ran.

    GRADSYNC=build/gradsync python3 test/validation/nccl_tests/tuner_choices.py
"""
import csv
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pylib"))
import gradsync_command as cli  # noqa: E402

ROOT = cli.SOURCE_DIR
TUNING = os.path.join(ROOT, "test", "data", "nccl-tests", "tuning")

# Per table and layout (NCCL_TESTS_SPLIT_MASK): the topology of its machine, the bench
# arguments that give the communicator, and whether the unforced choice is checked.
TABLES = [
    # One communicator of all 32 GPUs: aws-ofi-nccl's p5en regions (the topology's rules).
    dict(file="ncclgauge-p5en-4x8.csv", topology="aws-p5en-4node-efa.yaml", mask="0x0",
         args=[], unforced=True, known={}),
    # Eight communicators of 4 ranks, one GPU per server: NCCL's channels through that GPU's
    # NIC (4 at most). The unforced choice is not checked: the topology's rules are the
    # plugin's for 8 ranks per node, and its regions for one rank per node (Tree/LL128 to
    # 1 MiB at 4 ranks) differ from this run at 512 KiB (Tree/Simple), so the run's plugin was
    # not the source's version.
    dict(file="ncclgauge-p5en-4x8.csv", topology="aws-p5en-4node-efa.yaml", mask="0x7",
         args=["--gpus", "4", "--placement", "strided"], unforced=False, known={}),
]
FORCED = [(a, p) for a in ("Ring", "Tree") for p in ("LL", "LL128", "Simple")]


def choices(rows):
    """Per size: (algorithm/protocol, channels) of `bench ... --json` rows."""
    return {int(r["bytes"]): (f"{r['algorithm']}/{r['protocol']}".lower(), r["channels"])
            for r in rows}


def without_tuner(text):
    """The topology without its nccl.tuner rules: NCCL_ALGO / NCCL_PROTO override a plugin."""
    doc = yaml.safe_load(text)
    doc.get("nccl", {}).pop("tuner", None)
    return yaml.safe_dump(doc, sort_keys=False)


def check_table(table, checks):
    topology = os.path.join(ROOT, "topologies", table["topology"])
    with open(os.path.join(TUNING, table["file"]), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["mask"] == table["mask"]]
    name = f"{table['file']} mask {table['mask']}"
    checks.require(len(rows) > 0, f"{name}: rows")
    sizes = ["--min", "1KiB", "--max", "1GiB"]
    auto = choices(cli.bench_rows(topology, *table["args"], "--algo", "auto", *sizes))
    untuned = without_tuner(cli.read_text(topology))
    forced = {(a, p): choices(cli.bench_text(untuned, *table["args"], "--algo", a.lower(),
                                             "--set", f"nccl.protocols=[{p.lower()}]", *sizes))
              for a, p in FORCED}
    agree = total = 0

    def compare(key, want, got, what):
        nonlocal agree, total
        total += 1
        agree += got == want
        reason = table["known"].get(key)
        if reason:
            print(f"known {name} {what}: ran {want}, gradsync {got}: {reason}")
            checks(got != want, f"{name} {what}: known difference now agrees; drop it from known")
        else:
            checks(got == want, f"{name} {what}: ran {want}, gradsync {got}")

    for r in rows:
        size = int(r["size_bytes"])
        if table["unforced"]:
            compare(("auto", size), (r["auto_algo_proto"].lower(), int(r["auto_nch"])),
                    auto.get(size), f"{size} B unforced (algorithm/protocol, channels)")
        for a, p in FORCED:
            compare((f"{a}/{p}", size), int(r[f"nch_forced_{a}-{p}"]),
                    forced[(a, p)].get(size, (None, None))[1],
                    f"{size} B NCCL_ALGO={a} NCCL_PROTO={p} channels")
    setting = " ".join([table["topology"], *table["args"]])
    print(f"{name} ({setting}): {agree} of {total} as the "
          f"run's TUNING lines, {len(rows)} sizes")


def main():
    checks = cli.Checks(quiet=True)
    for table in TABLES:
        check_table(table, checks)
    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
