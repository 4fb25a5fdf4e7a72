#!/usr/bin/env python3
"""The Python module gives what the command line gives (sim/python/gradsync_module.cpp).

Usage: GRADSYNC=path/to/gradsync PYTHONPATH=FOLDER_OF_THE_MODULE python3 python_api_test.py ROOT

Each function of `import gradsync` runs the command of the same name in a child process and
returns its --json output parsed; this checks, against the executable run on the same inputs:
  - run(path) and run(dict, set=...) equal `gradsync run ... --json` (every key, every number),
    on two shipped scenarios, and the Python process keeps working after many simulations
    (SimGrid allows one per process: the module must never start one in its own);
  - bench(topology, **options), estimate(**options), topo(), models() equal their commands;
  - sweep_results(dir) is the rows of a real sweep's results.jsonl;
  - bad input raises ValueError with the very line the command prints (file:line:col).
"""
import json
import os
import sys
import tempfile

import gradsync

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command  # noqa: E402  (the executable; `gradsync` above is the module under test)

check = gradsync_command.Checks()
cli = gradsync_command.status
cli_json = gradsync_command.run_json


def main():
    root = sys.argv[1]
    scenarios = os.path.join(root, "scenarios")
    topologies = os.path.join(root, "topologies")

    for name in ("default.yaml", "resnet50-pcie-2node-10gbe.yaml"):
        path = os.path.join(scenarios, name)
        api = gradsync.run(path)
        check(api == cli_json("run", path, "--json"),
              f"run({name}) equals `gradsync run --json` ({api['step_time_s']:.6f} s step)")

    # A scenario given as a dict (a relative topology path is taken from the current
    # directory), with --set values, against the file with the same --set on the CLI.
    path = os.path.join(scenarios, "resnet50-pcie-2node-10gbe.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    cwd = os.getcwd()
    os.chdir(scenarios)
    try:
        import yaml  # Debian python3-yaml
        scenario = yaml.safe_load(text)
        sets = {"topology_overrides.nodes": 4, "sync.bucket": "1MiB"}
        api = gradsync.run(scenario, set=sets, fidelity="flow")
        ref = cli_json("run", path, "--json", "--set", "topology_overrides.nodes=4",
                       "--set", "sync.bucket=1MiB", "--fidelity", "flow")
        check(api == ref, "run(dict, set=..., fidelity='flow') equals the CLI with --set")
    except ImportError:
        print("SKIP run(dict): python3-yaml is not installed")
    finally:
        os.chdir(cwd)

    topology = os.path.join(topologies, "dgx-h100-4node-ib.yaml")
    api = gradsync.bench(topology, set={"nodes": 2}, algo="auto", min="64KiB", max="64MiB",
                         factor=4, best=True)
    ref = cli_json("bench", topology, "--json", "--set", "nodes=2", "--algo", "auto", "--min",
                   "64KiB", "--max", "64MiB", "--factor", "4", "--best")
    check(api == ref and len(api) == 6, f"bench(...) equals `gradsync bench --json` ({len(api)} rows)")

    api = gradsync.estimate(params="7B", dtype="fp16", bandwidth="10Gbps", latency="50us", gpus=8)
    ref = cli_json("estimate", "--json", "--params", "7B", "--dtype", "fp16", "--bandwidth",
                   "10Gbps", "--latency", "50us", "--gpus", "8")
    check(api == ref and api["grad_bytes"] == 14e9, "estimate(...) equals `gradsync estimate --json`")
    check(gradsync.topo(topology) == cli_json("topo", topology, "--json"), "topo() equals the CLI")
    check(gradsync.models() == cli_json("models", "--json"), "models() equals the CLI")

    # Many simulations from one Python process.
    times = {gradsync.run(os.path.join(scenarios, "resnet50-pcie-4gpu.yaml"))["step_time_s"]
             for _ in range(5)}
    check(len(times) == 1, "five runs in one process give one answer")

    # A real sweep's results, read back.
    with tempfile.TemporaryDirectory(prefix="gradsync-api-") as tmp:
        sweep = os.path.join(tmp, "sweep.yaml")
        with open(sweep, "w", encoding="utf-8") as f:
            f.write(f"base: {os.path.join(scenarios, 'resnet50-pcie-4gpu.yaml')}\n"
                    "grid:\n  sync.bucket: [1MiB, 25MiB]\n  training.accumulation: [1, 2]\n")
        out = os.path.join(tmp, "out")
        rc, _, err = cli("sweep", sweep, "-o", out, "-j", "2")
        assert rc == 0, err
        rows = gradsync.sweep_results(out)
        with open(os.path.join(out, "results.jsonl"), encoding="utf-8") as f:
            ref = [json.loads(line) for line in f if line.strip()]
        check(rows == ref and len(rows) == 4, f"sweep_results() gives the sweep's {len(rows)} points")
        try:
            gradsync.sweep_results(tmp)
            check(False, "sweep_results() of a folder without results raises ValueError")
        except ValueError:
            check(True, "sweep_results() of a folder without results raises ValueError")

    # Bad input: ValueError with the command's own one-line message.
    bad = os.path.join(root, "test", "data", "bad", "bad_boolean.yaml")
    _, _, err = cli("topo", bad, "--json")
    try:
        gradsync.topo(bad)
        check(False, "topo(bad file) raises ValueError")
    except ValueError as e:
        check(str(e) == err.strip() and ":6:35: error:" in str(e),
              f"topo(bad file) raises ValueError with the CLI's line: {e}")
    try:
        gradsync.bench(topology, set={"nodes": -1})
        check(False, "bench(set={'nodes': -1}) raises ValueError")
    except ValueError as e:
        check("must be between 1 and" in str(e), f"bench(set={{'nodes': -1}}) raises ValueError: {e}")

    print(f"{len(check.failures)} failed")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
