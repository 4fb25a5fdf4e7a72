#!/usr/bin/env bash
# Accepts the current numbers as the baseline of the CI gate: reruns the sweep and copies its
# results.csv to examples/ci/baseline/NAME.csv (commit it with the change that moved them).
#
#   GRADSYNC=./build/gradsync bash examples/ci/update-baseline.sh [SWEEP.yaml]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gradsync=${GRADSYNC:-gradsync}
sweep=${1:-$here/../sweeps/fabric-scaling.yaml}
name=$(basename "$sweep" .yaml)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$gradsync" sweep "$sweep" -o "$out/$name" -j "$(nproc)"
mkdir -p "$here/baseline"
cp "$out/$name/results.csv" "$here/baseline/$name.csv"
echo "baseline: $here/baseline/$name.csv"
