#!/usr/bin/env bash
# `gradsync import-trace` as a user runs it on a committed real DDP trace (torch 1.13, gloo, 2
# ranks, bucket cap 2 MiB): it writes a scenario, prints the traced step and the buckets
# measured beside simulated; the scenario runs; --set sync.bucket re-buckets its layers with
# DDP's rule (DDP's own report of this run: 7 buckets).
# Usage: GRADSYNC=/path/to/gradsync bash test/cli/import_trace_cli_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: $0 SOURCE_DIR}
gradsync=${GRADSYNC:?set GRADSYNC}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
traces=$src/test/data/traces
fail() { echo "FAIL: $*"; exit 1; }

out=$("$gradsync" import-trace "$traces/gpt2-l4-h256-v1000-cap2-rank0.json.gz" -o "$work/imported.yaml" \
        --model "$traces/gpt2-l4-h256-v1000.yaml" --world-size 2 --samples 8 \
        --topology "$src/topologies/pcie-4gpu.yaml")
echo "$out"
grep -q "rank 0 of 2, legacy format, 3 step(s) averaged" <<<"$out" || fail "summary line"
grep -q "43 layers, 3671552 parameters, fp32 gradients, 7 buckets" <<<"$out" || fail "model line"
grep -q "measured (gloo:all_reduce) and simulated on pcie-4gpu (2 GPUs)" <<<"$out" || fail "comparison"
[[ $(grep -c "^ *[0-6] .* MiB " <<<"$out") -eq 7 ]] || fail "7 bucket rows"
grep -q "from gpt2-l4-h256-v1000-cap2-rank0.json.gz" "$work/imported.yaml" || fail "source comments"

run=$("$gradsync" run "$work/imported.yaml" --json)
python3 - "$run" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["gpus"] == 2, r["gpus"]
assert r["buckets"] == 7, r["buckets"]
PY
rule=$("$gradsync" run "$work/imported.yaml" --set sync.bucket=1MiB --json)
python3 - "$rule" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["buckets"] > 7, r["buckets"]  # DDP's rule at 1 MiB: more, smaller buckets
assert any("set aside" in n for n in r.get("notes", [])), r.get("notes")
PY
echo "PASS"
