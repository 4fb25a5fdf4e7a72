#!/usr/bin/env python3
"""`gradsync advise` end to end, against `gradsync run` on the same overrides.

Cases (argv[1]):
  slow-network  ResNet-50 on two 4-GPU servers joined by 1 GbE: communication-bound, and a
                second server is SLOWER than one. A faster network is known to be the fix:
                it must rank above every overlap, algorithm and strategy change; the baseline
                and the top variant must equal `run --json` with the same --set; the
                accumulation found must be the smallest meeting the 30 % rule (checked at K
                and K-1 with `run`); the scaling curve must say one server beats two.
  forced-ring   The same servers on 10 GbE with sync.algorithm=ring forced: going back to
                auto (NCCL's tree across the NIC: 2 network steps instead of the ring's 2(n-1)
                per byte stream) is known to be better and must show a positive gain (> 3 %),
                ranked above turning overlap off (known worse).
  cost          dgx-h100-4node-ib with cost: --rank cost puts the lowest cost per sample first;
                with cost.networks, the same-speed networks are priced with their own parts
                (equal to `run` with the same --set).
  errors        bad inputs exit 2 with one line.
Environment: GRADSYNC (the binary), SCENARIOS (the scenarios folder).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SCENARIOS = os.environ["SCENARIOS"]
RESNET = os.path.join(SCENARIOS, "resnet50-pcie-2node-10gbe.yaml")
ONE_GBE = "topology_overrides.node.nic_bandwidth=1Gbps"
check = cli.Checks()


def advise(scenario, *args):
    return cli.run_json("advise", scenario, "--json", "-j", "2", *args, timeout=600)


def run(scenario, sets):
    args = ["run", scenario, "--json"]
    for s in sets:
        args += ["--set", s]
    return cli.run_json(*args, timeout=600)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def common_checks(doc, scenario, base_sets):
    base = doc["baseline"]
    ref = run(scenario, base_sets)
    check(close(base["samples_per_s"], ref["samples_per_s"]),
          f"baseline samples/s {base['samples_per_s']:.1f} = run's {ref['samples_per_s']:.1f}")
    vs = doc["variants"]
    check(len(vs) >= 5, f"{len(vs)} variants")
    s = [v["samples_per_s"] for v in vs]
    check(all(a >= b for a, b in zip(s, s[1:])), "variants sorted by samples/s, best first")
    check(all(close(v["gain"], v["samples_per_s"] / base["samples_per_s"] - 1) for v in vs),
          "gain = samples/s over the baseline's - 1")
    top = vs[0]
    again = run(scenario, base_sets + top["sets"])
    check(close(top["samples_per_s"], again["samples_per_s"]),
          f"top variant '{top['change']}' reproduced by run --set ({again['samples_per_s']:.1f})")
    return vs


def index_of(vs, pred):
    for i, v in enumerate(vs):
        if pred(v):
            return i
    return None


def case_slow_network():
    doc = advise(RESNET, "--set", ONE_GBE)
    vs = common_checks(doc, RESNET, [ONE_GBE])
    check(doc["baseline"]["verdict"] == "communication-bound", "1 GbE baseline is communication-bound")
    net = index_of(vs, lambda v: v["kind"] == "fabric")
    check(net is not None, "a faster network is proposed")
    others = [i for i, v in enumerate(vs) if v["kind"] in ("overlap", "algorithm", "strategy")]
    check(net is not None and all(net < i for i in others),
          "a faster network ranks above every overlap, algorithm and strategy change")
    check(vs[0]["gain"] > 5.0, f"the best change gains x{vs[0]['gain'] + 1:.1f} (> x6)")
    # Scaling: one server beats two on 1 GbE.
    curve = {p["nodes"]: p["samples_per_s"] for p in doc["scaling"]["curve"]}
    check(curve.get(1, 0) > curve.get(2, 1e300), "one server is faster than two on 1 GbE")
    be = doc["scaling"]["breakeven_nodes"]
    check(be is None or be > 2, f"breakeven beyond 2 servers ({be})")
    # The accumulation found is the smallest meeting the rule.
    k = doc["rule"]["accumulation_needed"]
    check(isinstance(k, int) and k > 1, f"accumulation needed: {k}")
    if isinstance(k, int) and k > 1:
        at_k = run(RESNET, [ONE_GBE, f"training.accumulation={k}"])
        below = run(RESNET, [ONE_GBE, f"training.accumulation={k - 1}"])
        check(at_k["exposed_comm_s"] / at_k["step_time_s"] <= 0.30, f"K={k} meets the 30 % rule")
        check(below["exposed_comm_s"] / below["step_time_s"] > 0.30, f"K={k - 1} does not")
    r = doc["rule"]["topk_ratio_needed"]
    check(r is not None and 0 < r < 1, f"Top-K keep-ratio needed: {r}")
    # The cheapest network meeting the rule, read from the same networks table: the lowest
    # line rate (then Ethernet < RoCE < InfiniBand) whose run meets it, and it really does.
    order = {"ethernet": 0, "roce": 1, "efa": 1, "infiniband": 2}
    nets = doc["networks"]
    meeting = sorted((n for n in nets if n["meets_rule"]),
                     key=lambda n: (n["gbps"], order[n["fabric"]], not n["baseline"]))
    check(len(nets) > 5 and nets[0]["baseline"], f"{len(nets)} networks simulated, baseline first")
    check(meeting and doc["cheapest_network_meeting_rule"] == meeting[0]["network"],
          f"cheapest network meeting the rule: {doc['cheapest_network_meeting_rule']}")
    if meeting:
        again = run(RESNET, [ONE_GBE, *meeting[0]["sets"]])
        check(again["exposed_comm_s"] / again["step_time_s"] <= 0.30
              and abs(again["step_time_s"] - meeting[0]["step_time_s"]) < 1e-9,
              f"{meeting[0]['network']} meets the 30 % rule when run")
        slower = [n for n in nets if n["gbps"] < meeting[0]["gbps"]]
        check(all(not n["meets_rule"] for n in slower),
              f"no slower network meets it ({[n['network'] for n in slower]})")


def case_forced_ring():
    sets = ["sync.algorithm=ring"]
    doc = advise(RESNET, *sum((["--set", s] for s in sets), []))
    vs = common_checks(doc, RESNET, sets)
    auto = index_of(vs, lambda v: v["sets"] == ["sync.algorithm=auto"])
    off = index_of(vs, lambda v: v["sets"] == ["sync.overlap=none"])
    check(auto is not None and vs[auto]["gain"] > 0.03,
          f"ring -> auto gains {vs[auto]['gain'] * 100:.1f} % (> 3 %)" if auto is not None
          else "ring -> auto proposed")
    check(auto is not None and off is not None and auto < off, "ring -> auto ranks above overlap off")
    check(off is not None and vs[off]["gain"] < 0, "turning overlap off loses samples/s")


def case_cost():
    scenario = os.path.join(SCENARIOS, "default.yaml")
    doc = advise(scenario, "--rank", "cost", "--max-nodes", "8")
    # The same-speed comparison on 400G: InfiniBand (the baseline) against RoCE and Ethernet,
    # listed whether they gain or lose.
    same = [v for v in doc["variants"] if v["change"].endswith("(same line rate)")]
    check(len(same) == 2 and any("400 GbE" in v["change"] for v in same),
          f"same-speed networks listed: {[v['change'] for v in same]}")
    vs = doc["variants"]
    costs = [v["cost_per_sample"] for v in vs if v["cost_per_sample"] is not None]
    check(len(costs) >= 3, f"{len(costs)} variants priced")
    check(all(a <= b for a, b in zip(costs, costs[1:])), "ranked by cost per sample, lowest first")
    check(doc["baseline"]["cost_per_sample"] is not None, "the baseline is priced")
    # cost.networks prices the same-speed networks with their own parts: each such variant is
    # not marked same_prices, carries the prices in its sets, and costs what `run` says.
    prices = ("topology_overrides.cost.networks=[{fabric: ethernet, bandwidth: 400Gbps, nic: 700, "
              "switch_port: 300, cable: 100}, {fabric: roce, bandwidth: 400Gbps, nic: 1100, "
              "switch_port: 500, cable: 150}]")
    priced = advise(scenario, "--set", prices, "--max-nodes", "8")
    same = {v["change"]: v for v in priced["variants"] if v["change"].endswith("(same line rate)")}
    check(len(same) == 2 and all(not v["same_prices"] for v in same.values()),
          f"same-speed networks priced with cost.networks: {[(k, v['same_prices']) for k, v in same.items()]}")
    for change, v in same.items():
        nic = "700" if "400 GbE" in change else "1100"
        check(f"topology_overrides.cost.nic={nic}" in v["sets"], f"{change}: its NIC price in {v['sets']}")
        r = run(scenario, [prices] + v["sets"])
        check(close(v["cost_per_sample"], r["cost_per_sample"]),
              f"{change}: cost per sample {v['cost_per_sample']} = run's {r['cost_per_sample']}")
        unpriced = next(u for u in vs if u["change"] == change)
        check(not close(v["cost_per_sample"], unpriced["cost_per_sample"], 1e-3),
              f"{change}: its own prices change its cost ({v['cost_per_sample']} vs {unpriced['cost_per_sample']})")


def case_errors():
    bad = [
        ["advise", os.path.join(SCENARIOS, "no-such.yaml")],
        ["advise", RESNET, "--set", "sync.overlap=sometimes"],
        ["advise", RESNET, "--rank", "cost"],  # pcie-4gpu-2node-10gbe has no cost:
        ["advise", RESNET, "--rank", "fastest"],
    ]
    for args in bad:
        p = cli.run(*args, timeout=60)
        lines = cli.stderr_lines(p)
        check(p.returncode == 2 and len(lines) == 1 and "error" in lines[0],
              f"{' '.join(args[2:]) or args[1]}: exit {p.returncode}, {len(lines)} line(s)")


{"slow-network": case_slow_network, "forced-ring": case_forced_ring, "cost": case_cost,
 "errors": case_errors}[sys.argv[1]]()
sys.exit(check.exit_status())
