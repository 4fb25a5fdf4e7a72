#!/usr/bin/env python3
"""CLI contract of `gradsync sweep` and `gradsync merge` (examples/sweeps/README.md; README.md, Commands).

Usage: GRADSYNC=/path/to/gradsync python3 test/cli/sweep_test.py CASE [SOURCE_DIR]

Cases (each one CTest test, each a few seconds on small scenarios):
  shards_merge  shards 0/3, 1/3, 2/3 merged equal the unsharded sweep (same points, same
                metrics, identical results.csv); duplicates dedupe, conflicts and missing
                shards are reported
  kill_resume   a sweep SIGKILLed mid-way leaves no worker behind; --resume ends with every
                point exactly once, keeps what had finished, and drops a torn line
  interrupt_resume  SIGTERM and SIGINT sent to the sweep's whole process group (Slurm's time
                limit, scancel, Ctrl-C) at random moments, then --resume: every point exactly
                once, none recorded as failed, no SimGrid abort
  failing_point a bad value stops the sweep before any point runs (exit 2); with --keep-going a
                point that fails (bad value, time limit) is recorded with its error and the
                sweep goes on; exit 4
  baseline      --baseline/--max-regression exits 3 and names the regressed point
  bad_input     bad sweep files and options exit 2 with one line "file:line:col: error: ..."
  example       examples/sweeps/fabric-scaling.yaml runs, as examples/ci/ runs it
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SOURCE = cli.source_dir(2)
SCENARIO = os.path.join(SOURCE, "scenarios", "resnet50-pcie-2node-10gbe.yaml")
# Each message says what went wrong: only failures are printed.
check = cli.Checks(quiet=True)
write = cli.write_text
read = cli.read_text
jsonl = cli.read_jsonl


def run(*args, timeout=120):
    return cli.status(*args, timeout=timeout)


def without_wall(record):
    return {k: v for k, v in record.items() if k != "wall_s"}


def grid_sweep(tmp, name="s.yaml", base=SCENARIO, extra=""):
    return write(os.path.join(tmp, name),
                 f"name: test\nbase: {base}\ngrid:\n"
                 "  topology_overrides.nodes: [1, 2, 4]\n"
                 "  sync.algorithm: [ring, tree]\n" + extra)


def case_shards_merge(tmp):
    sweep = grid_sweep(tmp, extra="zip:\n  sync.bucket: [25MiB, 50MiB]\n")  # 2 x 3 x 2 = 12 points
    full = os.path.join(tmp, "full")
    rc, out, err = run("sweep", sweep, "-o", full, "-j", "2")
    check(rc == 0, f"unsharded sweep exit {rc}: {err}")
    all_records = jsonl(os.path.join(full, "results.jsonl"))
    check(len(all_records) == 12, f"12 points expected, got {len(all_records)}")
    check([r["index"] for r in all_records] == list(range(12)), "results.jsonl sorted by index")
    check(all(r["ok"] for r in all_records), "every point ran")

    shards = []
    for i in range(3):
        d = os.path.join(tmp, f"shard-{i}")
        rc, out, err = run("sweep", sweep, "-o", d, "-j", "2", "--shard", f"{i}/3")
        check(rc == 0, f"shard {i}/3 exit {rc}: {err}")
        recs = jsonl(os.path.join(d, "results.jsonl"))
        check(all(r["index"] % 3 == i for r in recs), f"shard {i}/3 holds index mod 3 == {i}")
        check(len(recs) == 4, f"shard {i}/3 has 4 points, got {len(recs)}")
        shards.append(d)

    merged = os.path.join(tmp, "merged")
    rc, out, err = run("merge", *shards, "-o", merged)
    check(rc == 0, f"merge exit {rc}: {out} {err}")
    merged_records = jsonl(os.path.join(merged, "results.jsonl"))
    check([r["point"] for r in merged_records] == [r["point"] for r in all_records],
          "merged shards hold the same points, in the same order, as the unsharded sweep")
    check([without_wall(r) for r in merged_records] == [without_wall(r) for r in all_records],
          "merged shards hold the same results (metrics, sets) as the unsharded sweep")
    check(read(os.path.join(merged, "results.csv")) == read(os.path.join(full, "results.csv")),
          "merged results.csv is identical to the unsharded one")
    header = read(os.path.join(full, "results.csv")).splitlines()[0].split(",")
    check(header[:4] == ["sync.bucket", "sync.bucket [B]", "topology_overrides.nodes", "sync.algorithm"],
          f"swept keys first in results.csv (zip, then grid; a size also in bytes), got {header[:4]}")
    rows = [r.split(",") for r in read(os.path.join(full, "results.csv")).splitlines()[1:]]
    from_units = {"25MiB": 25 * 2**20, "50MiB": 50 * 2**20}
    check(all(int(r[1]) == from_units.get(r[0], -1) for r in rows),
          f"the [B] column is the size in bytes: {[r[:2] for r in rows[:3]]}")
    check("step_time_s" in header and header[-3:] == ["point", "ok", "error"],
          f"metric columns then point, ok, error: {header}")

    # The same shard twice: duplicates dedupe.
    rc, out, err = run("merge", *shards, shards[0], "-o", os.path.join(tmp, "merged2"))
    check(rc == 0 and "4 duplicates dropped" in out, f"duplicate shard deduped: {rc} {out} {err}")
    # A missing shard: merged, but exit 4 naming the missing points.
    rc, out, err = run("merge", shards[0], shards[1], "-o", os.path.join(tmp, "merged3"))
    check(rc == 4 and "4 missing" in out and "2, 5, 8, 11" in out,
          f"missing shard gives exit 4 and the missing indexes: {rc} {out} {err}")
    # A conflicting duplicate: exit 2 naming the point.
    conflict = os.path.join(tmp, "conflict")
    shutil.copytree(shards[0], conflict)
    victim = sorted(os.listdir(os.path.join(conflict, "points")))[0]
    path = os.path.join(conflict, "points", victim)
    rec = json.loads(read(path))
    rec["metrics"]["step_time_s"] *= 2
    write(path, json.dumps(rec) + "\n")
    rc, out, err = run("merge", shards[0], conflict, "-o", os.path.join(tmp, "merged4"))
    check(rc == 2 and "conflicting results for point " + victim[:-5] in err and err.count("\n") == 1,
          f"conflicting duplicate exits 2 naming the point: {rc} {err}")
    # Merging into a sweep's own folder is refused.
    rc, out, err = run("merge", shards[0], shards[1], "-o", shards[2])
    check(rc == 2 and "points/" in err, f"merge into a sweep folder refused: {rc} {err}")
    # A merged folder merges again (from its results.jsonl).
    rc, out, err = run("merge", merged, "-o", os.path.join(tmp, "merged5"))
    check(rc == 0 and read(os.path.join(tmp, "merged5", "results.csv")) == read(os.path.join(full, "results.csv")),
          f"a merged folder merges again: {rc} {err}")


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def case_kill_resume(tmp):
    # The base lives in tmp so that its workers can be found by their command line.
    base = os.path.join(tmp, "base-kill.yaml")
    write(base, read(SCENARIO).replace("../topologies/", os.path.join(SOURCE, "topologies") + "/"))
    sweep = write(os.path.join(tmp, "s.yaml"),
                  f"base: {base}\ngrid:\n  topology_overrides.nodes: [1, 2, 3, 4, 5, 6]\n"
                  "  sync.algorithm: [ring, tree, hierarchical]\n")  # 18 points
    out_dir = os.path.join(tmp, "out")
    points = os.path.join(out_dir, "points")
    proc = subprocess.Popen(cli.command("sweep", sweep, "-o", out_dir, "-j", "2"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if os.path.isdir(points) and len([n for n in os.listdir(points) if n.endswith(".json")]) >= 4:
            break
        time.sleep(0.002)
    check(proc.poll() is None, "the sweep was still running when killed (make it longer)")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {n: read(os.path.join(points, n)) for n in os.listdir(points) if n.endswith(".json")}
    check(4 <= len(before) < 18, f"killed mid-way: {len(before)} of 18 points stored")
    time.sleep(0.3)
    check(processes_mentioning(base) == [], "no worker outlives a SIGKILLed sweep (PR_SET_PDEATHSIG)")

    # What a crash can leave: a torn last line, a temp file that never reached its rename.
    with open(os.path.join(out_dir, "results.jsonl"), "a") as f:
        f.write('{"point": "p00017-0')
    stale = os.path.join(points, ".p00017-00000000.json.tmp-99999")
    write(stale, "{")

    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "2")
    check(rc == 2 and "already holds results" in err and "--resume" in err,
          f"a used folder without --resume exits 2: {rc} {err}")
    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "2", "--resume")
    check(rc == 0, f"resume exit {rc}: {err}")
    check(f"{len(before)} of 18 points already done, {18 - len(before)} to run" in err,
          f"resume reports what it kept: {err}")
    records = jsonl(os.path.join(out_dir, "results.jsonl"))
    ids = [r["point"] for r in records]
    check(len(ids) == 18 and len(set(ids)) == 18, f"every point exactly once: {len(ids)} lines, {len(set(ids))} ids")
    check([r["index"] for r in records] == list(range(18)), "sorted by index after resume")
    csv_rows = read(os.path.join(out_dir, "results.csv")).splitlines()
    check(len(csv_rows) == 19, f"results.csv: header + 18 rows, got {len(csv_rows)}")
    after = {n: read(os.path.join(points, n)) for n in before}
    check(after == before, "finished points are not run again")
    check(not os.path.exists(stale), "a stale temp file is removed")
    check(len([n for n in os.listdir(points) if n.endswith(".json")]) == 18, "18 point files")
    # Resuming a finished sweep runs nothing.
    rc, out, err = run("sweep", sweep, "-o", out_dir, "--resume")
    check(rc == 0 and "18 of 18 points already done, 0 to run" in err, f"resume of a finished sweep: {rc} {err}")
    # The sweep file edited (a value changed, same number of points): the new values run, the
    # results of the old ones move to stale/ and leave the results.
    write(sweep, read(sweep).replace("5, 6]", "5, 7]"))
    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "2", "--resume")
    check(rc == 0 and "15 of 18 points already done, 3 to run" in err and "3 results of values no longer in the sweep moved to stale/" in err,
          f"resume after an edit: {rc} {err}")
    records = jsonl(os.path.join(out_dir, "results.jsonl"))
    check(len(records) == 18 and sorted({r["sets"]["topology_overrides.nodes"] for r in records}) == ["1", "2", "3", "4", "5", "7"],
          "after the edit, results hold the new values only")
    check(len(os.listdir(os.path.join(out_dir, "stale"))) == 3, "3 stale records kept in stale/")
    # Resuming with another shard is refused.
    rc, out, err = run("sweep", sweep, "-o", out_dir, "--resume", "--shard", "0/2")
    check(rc == 2 and "holds another sweep" in err, f"resume with another shard refused: {rc} {err}")

    # SIGTERM (Slurm's time limit): stops cleanly, exit 143, results regenerated.
    out2 = os.path.join(tmp, "out2")
    proc = subprocess.Popen(cli.command("sweep", sweep, "-o", out2, "-j", "2"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        p2 = os.path.join(out2, "points")
        if os.path.isdir(p2) and len([n for n in os.listdir(p2) if n.endswith(".json")]) >= 3:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate()
    if check(proc.returncode == 128 + signal.SIGTERM, f"SIGTERM exit {proc.returncode}: {err}"):
        stored = len([n for n in os.listdir(os.path.join(out2, "points")) if n.endswith(".json")])
        check(len(jsonl(os.path.join(out2, "results.jsonl"))) == stored,
              "after SIGTERM results.jsonl holds exactly the stored points")
        check("continue with --resume" in err, f"SIGTERM message: {err}")


def case_interrupt_resume(tmp):
    import random
    rng = random.Random(20261204)
    sweep = write(os.path.join(tmp, "s.yaml"),
                  f"base: {SCENARIO}\ngrid:\n  topology_overrides.nodes: [1, 2, 3, 4, 5, 6, 7, 8]\n"
                  "  sync.algorithm: [ring, tree, hierarchical]\n"
                  "  sync.overlap: [bucketed, none, layerwise]\n"
                  "  training.steps: [1, 2]\n")  # 144 points, ~3 s with -j 2 (0.05 s each)
    out_dir = os.path.join(tmp, "out")
    points = os.path.join(out_dir, "points")
    stopped = 0
    for trial in range(6):
        sig = signal.SIGTERM if trial % 2 == 0 else signal.SIGINT
        args = cli.command("sweep", sweep, "-o", out_dir, "-j", "2") + (["--resume"] if trial else [])
        # Its own session: the signal goes to the sweep and its workers together, as Slurm and
        # a terminal send it.
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        # The sweep's first line ("sweep: …") comes once its points are checked and its stop
        # handlers are installed; a signal before that (a slow sanitized start) would only
        # find a process that has not begun.
        first = proc.stderr.readline()
        time.sleep(rng.uniform(0.1, 0.6))
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
            stopped += 1
        _, err = proc.communicate()
        err = first + err
        check(proc.returncode in (0, 128 + sig), f"trial {trial}: exit {proc.returncode}: {err[-500:]}")
        check("Probable bug" not in err and "Aborted" not in err, f"trial {trial}: SimGrid abort: {err[-500:]}")
        for n in os.listdir(points) if os.path.isdir(points) else []:
            if n.endswith(".json"):
                record = json.loads(read(os.path.join(points, n)))
                check(record["ok"], f"trial {trial}: {n} recorded as failed: {record.get('error')}")
    check(stopped >= 4, f"only {stopped} of 6 trials were interrupted mid-sweep (make the sweep longer)")
    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "2", "--resume")
    check(rc == 0, f"final resume exit {rc}: {err}")
    records = jsonl(os.path.join(out_dir, "results.jsonl"))
    ids = [r["point"] for r in records]
    check(len(ids) == 144 and len(set(ids)) == 144, f"every point exactly once: {len(ids)} lines, {len(set(ids))} ids")
    check(all(r["ok"] for r in records), "no point recorded as failed")


def case_failing_point(tmp):
    sweep = write(os.path.join(tmp, "s.yaml"),
                  f"base: {SCENARIO}\ngrid:\n  sync.algorithm: [ring, rng, tree]\n")
    out_dir = os.path.join(tmp, "out")
    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "1")
    check(rc == 2 and "'rng' is not one of" in err and not os.path.exists(out_dir),
          f"a bad value stops the sweep before any point runs: {rc} {err}")
    rc, out, err = run("sweep", sweep, "-o", out_dir, "-j", "1", "--keep-going")
    check(rc == 4, f"with --keep-going a failed point gives exit 4, got {rc}: {err}")
    records = jsonl(os.path.join(out_dir, "results.jsonl"))
    check([r["ok"] for r in records] == [True, False, True], f"the sweep goes on after a failure: {[r['ok'] for r in records]}")
    bad = records[1]
    check(bad["exit_code"] == 2 and "'rng' is not one of" in bad["error"] and bad["metrics"] is None,
          f"the failure is recorded with its error: {bad}")
    check(bad["sets"] == {"sync.algorithm": "rng"}, "the failed point's sets")
    check("failed: " + bad["point"] in out and "'rng' is not one of" in out, f"the summary names it: {out}")
    rows = read(os.path.join(out_dir, "results.csv")).splitlines()
    check(rows[2].startswith("rng,") and ",false," in rows[2] and "'rng' is not one of" in rows[2],
          f"results.csv row of the failed point: {rows[2]}")
    # --json summary lists it.
    rc, out, err = run("sweep", sweep, "-o", out_dir, "--resume", "--json", "--keep-going")
    summary = json.loads(out)
    check(rc == 4 and summary["ran"] == 0 and [f["point"] for f in summary["failed"]] == [bad["point"]],
          f"--json summary: {out}")
    # A point over the time limit is killed and recorded: no worker starts in 1 ms.
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "slow"), "--timeout", "1ms", "--keep-going")
    rec = jsonl(os.path.join(tmp, "slow", "results.jsonl"))
    check(rc == 4 and len(rec) == 3 and all("timed out after 1 ms" in (r["error"] or "") for r in rec),
          f"time limit: {rc} {[r['error'] for r in rec] if rec else err}")


def case_baseline(tmp):
    sweep = grid_sweep(tmp)
    old = os.path.join(tmp, "old")
    rc, out, err = run("sweep", sweep, "-o", old)
    check(rc == 0, f"baseline sweep: {rc} {err}")
    # The same sweep against itself passes.
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "same"),
                       "--baseline", os.path.join(old, "results.csv"), "--max-regression", "0%")
    check(rc == 0 and "6 points compared, 0 regressed" in out, f"no regression against itself: {rc} {out} {err}")
    # A baseline where one point was 20 % faster: today's result is a 25 % regression.
    lines = read(os.path.join(old, "results.csv")).splitlines()
    header = lines[0].split(",")
    col = header.index("step_time_s")
    row = lines[4].split(",")  # point 3: nodes=2, tree
    row[col] = repr(float(row[col]) * 0.8)
    lines[4] = ",".join(row)
    faster = write(os.path.join(tmp, "faster.csv"), "\n".join(lines) + "\n")
    point3 = jsonl(os.path.join(old, "results.jsonl"))[3]["point"]
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "new"),
                       "--baseline", faster, "--max-regression", "5%")
    check(rc == 3, f"a regression exits 3, got {rc}: {out} {err}")
    check(f"regression: {point3} (topology_overrides.nodes=2, sync.algorithm=tree)" in out
          and "+25.0 %" in out and "1 regressed beyond 5.0 %" in out,
          f"the regressed point is named: {out}")
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "new2"),
                       "--baseline", faster, "--max-regression", "30%")
    check(rc == 0, f"within --max-regression 30%: exit {rc}: {out}")
    # --json lists it.
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "new3"), "--json",
                       "--baseline", faster, "--max-regression", "5%")
    check(rc == 3 and [r["point"] for r in json.loads(out)["regressions"]] == [point3], f"--json regressions: {out}")
    # A baseline without the swept keys is bad input, found before anything runs.
    nokeys = write(os.path.join(tmp, "nokeys.csv"), "step_time_s\n1.0\n")
    rc, out, err = run("sweep", sweep, "-o", os.path.join(tmp, "new4"), "--baseline", nokeys)
    check(rc == 2 and err.startswith(nokeys + ":1:1: error: the baseline has no column 'topology_overrides.nodes'")
          and not os.path.exists(os.path.join(tmp, "new4")), f"baseline without key columns: {rc} {err}")


BAD_FILES = [
    # (text, line:col, message part)
    ("base: {base}\ngrdi:\n  sync.algorithm: [ring]\n", "2:1", "unknown key 'grdi' at top level; did you mean 'grid'?"),
    ("base: {base}\ngrid:\n  sync.algorithm: []\n", "3:19", "grid.sync.algorithm is an empty list"),
    ("base: {base}\nzip:\n  sync.algorithm: [ring, tree]\n  sync.bucket: [25MiB]\n", "4:3", "zip lists must have equal lengths"),
    ("base: {base}\ngrid:\n  sync.algoritm: [ring, tree]\n", "3:3", "did you mean 'algorithm'?"),
    ("base: {base}\ngrid:\n  topology_overrides.nodse: [1, 2]\n", "3:3", "did you mean 'nodes'?"),
    ("base: nowhere.yaml\ngrid:\n  sync.algorithm: [ring]\n", "1:7", "cannot open scenario 'nowhere.yaml'"),
    ("base: {base}\ngrid:\n  sync.algorithm: [ring]\n  sync.algorithm: [tree]\n", "4:3", "duplicate"),
    ("base: {base}\ngrid:\n  a.b: [{hundred}]\n  c.d: [{hundred}]\n  e.f: [{hundred}]\n", "2:1", "at most 100000"),
    ("base: {base}\ngrid:\n\tsync.algorithm: [ring]\n", "3:1", "tab"),
    # Every point is checked before any runs: a bad value at its position, a bad combination
    # at the point's first value.
    ("base: {base}\ngrid:\n  topology_overrides.nodes: [1, -2]\n", "3:33", "must be between 1 and 100000, got -2 (point 1"),
    ("base: {base}\ngrid:\n  sync.algorithm: [ring]\n  sync.compression: [none, int3]\n", "4:28", "'int3' is not one of"),
    ("base: {base}\ngrid:\n  topology_overrides.nodes: [2, 1]\n  gpus: [8]\n", "4:10", "has 4 GPUs (point 1: topology_overrides.nodes=1, gpus=8"),
]


def case_bad_input(tmp):
    hundred = ", ".join(str(i) for i in range(100))
    for n, (text, pos, part) in enumerate(BAD_FILES):
        path = write(os.path.join(tmp, f"bad{n}.yaml"), text.format(base=SCENARIO, hundred=hundred))
        rc, out, err = run("sweep", path, "-o", os.path.join(tmp, f"out{n}"))
        check(rc == 2 and out == "" and err.count("\n") == 1 and err.startswith(f"{path}:{pos}: error: ")
              and part.lower() in err.lower(),
              f"bad sweep {n}: expected exit 2 and '{path}:{pos}: error: ...{part}...', got {rc}: {err!r}")
    good = grid_sweep(tmp)
    for args, part in [(["--shard", "3/3"], "--shard 3/3: error: shard 3 of 3 does not exist: shards count from 0"),
                       (["--shard", "1-3"], "--shard 1-3: error: expected I/N"),
                       (["--baseline", good, "--max-regression", "5"], "--max-regression 5: error: expected a percentage"),
                       (["--timeout", "10"], "--timeout 10: error:"),
                       (["-j", "0"], "")]:
        rc, out, err = run("sweep", good, "-o", os.path.join(tmp, "o"), *args)
        check(rc == 2 and err.count("\n") >= 1 and (part == "" or err.startswith(part)),
              f"sweep {' '.join(args)}: expected exit 2 '{part}', got {rc}: {err!r}")
    rc, out, err = run("merge", os.path.join(tmp, "nothing"), "-o", os.path.join(tmp, "m"))
    check(rc == 2 and "not a folder of sweep results" in err, f"merge of a missing folder: {rc} {err}")


def case_example(tmp):
    example = os.path.join(SOURCE, "examples", "sweeps", "fabric-scaling.yaml")
    out_dir = os.path.join(tmp, "out")
    rc, out, err = run("sweep", example, "-o", out_dir, "-j", "2")
    check(rc == 0, f"the example sweep runs: {rc} {err}")
    records = jsonl(os.path.join(out_dir, "results.jsonl"))
    check(len(records) >= 8 and all(r["ok"] for r in records), f"{len(records)} points, all ok")
    # The CI example gates against its own output.
    rc, out, err = run("sweep", example, "-o", os.path.join(tmp, "again"), "-j", "2",
                       "--baseline", os.path.join(out_dir, "results.csv"), "--max-regression", "5%")
    check(rc == 0 and f"{len(records)} points compared, 0 regressed" in out, f"example gate: {rc} {out}")


def main():
    cli.executable()
    if len(sys.argv) < 2:
        print(__doc__)
        return 1
    case = sys.argv[1]
    fn = globals().get("case_" + case)
    if fn is None:
        print(f"unknown case {case}")
        return 1
    tmp = tempfile.mkdtemp(prefix=f"gradsync-sweep-{case}-")
    start = time.time()
    try:
        fn(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{case}: {'FAILED' if check.failures else 'ok'} ({time.time() - start:.1f} s)")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
