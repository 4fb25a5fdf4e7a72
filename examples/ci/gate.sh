#!/usr/bin/env bash
# The CI gate as a plain script, for any CI system (GitLab, Jenkins, Buildkite):
#
#   GRADSYNC=./build/gradsync bash examples/ci/gate.sh [SWEEP.yaml [BASELINE.csv]]
#
# Exit codes (those of `gradsync sweep`): 0 pass; 3 a point's step_time_s grew by more than
# MAX_REGRESSION (default 5%) over the baseline, or a point that ran in the baseline now fails
# (each is named on stdout); 4 points failed that the baseline does not cover; 2 bad input.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gradsync=${GRADSYNC:-gradsync}
sweep=${1:-$here/../sweeps/fabric-scaling.yaml}
baseline=${2:-$here/baseline/$(basename "$sweep" .yaml).csv}
out=${OUT:-$(mktemp -d)/$(basename "$sweep" .yaml)}
exec "$gradsync" sweep "$sweep" -o "$out" -j "$(nproc)" \
     --baseline "$baseline" --max-regression "${MAX_REGRESSION:-5%}"
