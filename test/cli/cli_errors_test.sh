#!/usr/bin/env bash
# CLI contract for bad input (README.md, Commands: exit codes): every bad topology file makes
# `gradsync topo FILE` exit 2 with exactly one line on stderr, "FILE:LINE:COL: error: ...",
# at the position and with the words that the file's first line announces:
#
#   # expect: LINE:COL: a distinctive part of the message
#
# (test/unit/config/config_errors_test.cpp reads the same headers, so both tests share one source of truth.)
# Nothing goes to stdout, and nothing may crash or hang (each run is limited to 20 s).
#
# Usage: GRADSYNC=/path/to/gradsync bash test/cli/cli_errors_test.sh test/data/bad
set -u

dir=${1:?usage: GRADSYNC=/path/to/gradsync $0 DIR_OF_BAD_YAML}
gradsync=${GRADSYNC:?set GRADSYNC to the gradsync executable}
limit=20
if [[ ! -x $gradsync ]]; then
  printf 'FAIL: GRADSYNC=%s is not an executable\n0 passed, 1 failed\n' "$gradsync"
  exit 1
fi

passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s: %s\n' "$1" "$2"; }

# run NAME ARGS...: runs gradsync with a time limit; sets rc, out, err.
run() {
  local name=$1
  shift
  timeout "$limit" "$gradsync" "$@" >"$work/out" 2>"$work/err" </dev/null
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    fail "$name" "timed out after ${limit}s"
    return 1
  fi
  return 0
}

# True when stderr holds exactly one newline-terminated, non-empty line.
one_line_on_stderr() {
  [[ $(wc -l <"$work/err") -eq 1 && -s "$work/err" && -z $(tail -c1 "$work/err") ]]
}

# check_error NAME PREFIX [SUBSTRING]: exit 2, stdout empty, one stderr line that starts with
# PREFIX (taken literally) and contains SUBSTRING.
check_error() {
  local name=$1 prefix=$2 substring=${3:-}
  if [[ $rc -ne 2 ]]; then
    fail "$name" "exit code $rc, expected 2 (stderr: ${err:0:300})"
  elif [[ -n $out ]]; then
    fail "$name" "stdout is not empty: ${out:0:200}"
  elif ! one_line_on_stderr; then
    fail "$name" "stderr is not exactly one line: ${err:0:300}"
  elif [[ $err != "$prefix"* ]]; then
    fail "$name" "stderr does not start with '$prefix': $err"
  elif [[ $err != *"$substring"* ]]; then
    fail "$name" "message lacks '$substring': $err"
  else
    pass "$name"
  fi
}

shopt -s nullglob
files=("$dir"/*.yaml)
if [[ ${#files[@]} -eq 0 ]]; then
  fail "$dir" "no *.yaml files found"
fi

for file in "${files[@]}"; do
  name=$(basename "$file" .yaml)
  header=$(head -n 1 "$file")
  if [[ ! $header =~ ^\#\ expect:\ ([0-9]+):([0-9]+):\ (.+)$ ]]; then
    fail "$name" "first line is not '# expect: LINE:COL: substring'"
    continue
  fi
  line=${BASH_REMATCH[1]}
  col=${BASH_REMATCH[2]}
  substring=${BASH_REMATCH[3]}
  run "$name" topo "$file" || continue
  check_error "$name" "$file:$line:$col: error: " "$substring"
done

# A file that does not exist: no position, just "FILE: error: ...".
missing="$dir/does-not-exist.yaml"
if run "missing file" topo "$missing"; then
  check_error "missing file" "$missing: error: " ""
fi

# A directory where a file is expected.
if run "directory as topology" topo "$dir"; then
  check_error "directory as topology" "$dir: error: " ""
fi

# Usage errors exit 2 as well (CLI11 may print a usage hint, so only the exit code is checked,
# plus: nothing on stdout, something on stderr).
check_usage() {
  local name=$1
  if [[ $rc -ne 2 ]]; then
    fail "$name" "exit code $rc, expected 2 (stderr: ${err:0:300})"
  elif [[ -z $err ]]; then
    fail "$name" "nothing on stderr"
  else
    pass "$name"
  fi
}
# import-trace: malformed, foreign, missing and size-less traces (nothing written).
traces=$(cd "$dir/../traces" && pwd)
printf '[\n{"name": "a", "ph": "X", "ts": 1, "dur": 2},\n{"name": tru}\n]' >"$work/bad.json"
if run "import-trace malformed JSON" import-trace "$work/bad.json" -o "$work/s.yaml"; then
  check_error "import-trace malformed JSON" "$work/bad.json:3:" "malformed JSON"
fi
printf '{"a": 1}' >"$work/foreign.json"
if run "import-trace foreign JSON" import-trace "$work/foreign.json" -o "$work/s.yaml"; then
  check_error "import-trace foreign JSON" "$work/foreign.json:1:1: error: " "expected a PyTorch profiler trace"
fi
if run "import-trace missing trace" import-trace "$work/none.json" -o "$work/s.yaml"; then
  check_error "import-trace missing trace" "$work/none.json: error: " "cannot open"
fi
legacy=$traces/gpt2-l4-h256-v1000-cap0.5-rank0.json
if run "import-trace legacy trace without --model" import-trace "$legacy" -o "$work/s.yaml" --world-size 2; then
  check_error "import-trace legacy trace without --model" "$legacy:1:1: error: " "give --model"
fi
if [[ -e $work/s.yaml ]]; then fail "import-trace errors" "a scenario was written"; fi

topology=$(cd "$dir/../../../topologies" && pwd)/dgx-a100.yaml
# bench --set: a bad override value names the --set.
if run "bench --set nodes=-1" bench "$topology" --set nodes=-1; then
  check_error "bench --set nodes=-1" "--set nodes=-1: error: " "must be between 1 and"
fi
# bench: a factor that makes hundreds of millions of sizes is refused before any runs.
if run "bench --factor 1.0000001" bench "$topology" --min 8B --max 16GiB --factor 1.0000001; then
  check_error "bench --factor 1.0000001" "gradsync bench --factor: error: " "at most 10000"
fi

# Bounded reads: sizes are checked before memory is spent (a 20 MB file, an endless device).
head -c 20000000 /dev/zero | tr '\0' 'a' >"$work/huge.yaml"
if run "a 20 MB topology" topo "$work/huge.yaml"; then
  check_error "a 20 MB topology" "$work/huge.yaml: error: " "larger than 16 MiB"
fi
if run "calibrate reading /dev/zero" calibrate "$topology" --nccl-tests /dev/zero; then
  check_error "calibrate reading /dev/zero" "/dev/zero: error: " "larger than 64 MiB"
fi
printf '#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  1048576 262144 float sum -1 1.7e308 1 1 0 1.7e308 1 1 0\n' >"$work/inf.log"
if run "an nccl-tests time of 1.7e308 us" calibrate "$topology" --nccl-tests "$work/inf.log"; then
  check_error "an nccl-tests time of 1.7e308 us" "$work/inf.log:2:31: error: " "not a plausible time"
fi

# Memory is checked before it is spent (memory_budget.hpp): GRADSYNC_MEMORY_LIMIT stands for a
# small machine or cgroup. Too little: exit 1 (the machine, not the input), one line naming
# the estimate, the budget and its source, before any row is simulated. Enough: the run.
# check_memory NAME SUBSTRING: exit 1, one stderr line with the budget's words and SUBSTRING.
# (Budgets leave room for a sanitizer build's larger resident set: only the check named fails.)
check_memory() {
  local name=$1 substring=$2
  if [[ $rc -ne 1 ]]; then
    fail "$name" "exit code $rc, expected 1 (stderr: ${err:0:300})"
  elif ! one_line_on_stderr; then
    fail "$name" "stderr is not exactly one line: ${err:0:300}"
  elif [[ $err != "gradsync: error: "*"$substring"*" needs about "*" of memory, more than the "*" left to gradsync (GRADSYNC_MEMORY_LIMIT=$GRADSYNC_MEMORY_LIMIT)"* ]]; then
    fail "$name" "unexpected message: ${err:0:300}"
  elif [[ $out == *"1073741824"* ]]; then
    fail "$name" "a row was simulated before the refusal"
  else
    pass "$name"
  fi
}
fat_tree=$(cd "$dir/../../../topologies" && pwd)/dgx-h100-32node-fat-tree-ib.yaml
export GRADSYNC_MEMORY_LIMIT=1GB
# 64 servers' ring at step fidelity, 32 pipeline steps: a plan of 134M transfers (7 GB).
if run "a step plan larger than the memory left" bench "$fat_tree" --set nodes=64 --algo ring \
     --fidelity step --pipeline 32 -b 1GiB -e 1GiB; then
  check_memory "a step plan larger than the memory left" "this plan's 133955584 transfers"
fi
export GRADSYNC_MEMORY_LIMIT=50MB
# 2,048 servers: 119,147 SimGrid hosts and links even for 8 ranks.
if run "a platform larger than the memory left" bench "$fat_tree" --set nodes=2048 -g 8 -b 1GiB \
     -e 1GiB; then
  check_memory "a platform larger than the memory left" "the simulated platform (119147 devices and links"
fi
export GRADSYNC_MEMORY_LIMIT=64GB
if run "a budget that suffices" bench "$fat_tree" --set nodes=16 --algo ring --fidelity step \
     -b 1GiB -e 1GiB; then
  if [[ $rc -eq 0 && $out == *"1073741824"* ]]; then pass "a budget that suffices"
  else fail "a budget that suffices" "exit $rc: ${err:0:300}"; fi
fi
export GRADSYNC_MEMORY_LIMIT=lots
if run "a malformed GRADSYNC_MEMORY_LIMIT" bench "$fat_tree" --set nodes=64 --algo ring \
     --fidelity step -b 1GiB -e 1GiB; then
  check_error "a malformed GRADSYNC_MEMORY_LIMIT" "GRADSYNC_MEMORY_LIMIT: error: "
fi
unset GRADSYNC_MEMORY_LIMIT

# An output that cannot be written is the machine, not the input: exit 1, one line "PATH: error:".
# check_unwritable NAME PATH
check_unwritable() {
  local name=$1 path=$2
  if [[ $rc -ne 1 ]]; then
    fail "$name" "exit code $rc, expected 1 (stderr: ${err:0:300})"
  elif ! one_line_on_stderr; then
    fail "$name" "stderr is not exactly one line: ${err:0:300}"
  elif [[ $err != "$path: error: cannot write file"* ]]; then
    fail "$name" "unexpected message: ${err:0:300}"
  else
    pass "$name"
  fi
}
if run "topo --dot into a missing folder" topo "$topology" --dot "$work/missing/t.dot"; then
  check_unwritable "topo --dot into a missing folder" "$work/missing/t.dot"
fi

# Parameter-server hosts (--ps-hosts) need a switch to be cabled to, and --algo ps.
if run "--ps-hosts on one server" bench "$topology" --algo ps --ps-hosts 2 -b 1MiB -e 1MiB; then
  check_error "--ps-hosts on one server" "gradsync bench --ps-hosts: error: " "has no NIC on one"
fi
if run "--ps-hosts with a ring" bench "$fat_tree" --algo ring --ps-hosts 2 -b 1MiB -e 1MiB; then
  check_error "--ps-hosts with a ring" "gradsync bench --ps-hosts: error: " "use --algo ps"
fi
if run "--ps-host-nic negative" bench "$fat_tree" --algo ps --ps-hosts 2 --ps-host-nic -5Gbps; then
  check_error "--ps-host-nic negative" "gradsync bench --ps-host-nic: error: " "negative"
fi
if run "--ps-host-nic zero" bench "$fat_tree" --algo ps --ps-hosts 2 --ps-host-nic 0Gbps; then
  check_error "--ps-host-nic zero" "gradsync bench --ps-host-nic: error: " "must be positive"
fi
if run "--ps-hosts with colocated servers" bench "$fat_tree" --algo ps --ps-hosts 2 \
     --ps-placement colocated; then
  check_error "--ps-hosts with colocated servers" "gradsync bench --ps-placement: error: " "colocated"
fi

if run "topo without a file" topo; then check_usage "topo without a file"; fi
if run "unknown subcommand" bogus; then check_usage "unknown subcommand"; fi
if run "no subcommand"; then check_usage "no subcommand"; fi
if [[ ${#files[@]} -gt 0 ]] && run "unknown option" topo "${files[0]}" --no-such-option; then
  check_usage "unknown option"
fi

printf '%d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 && $passed -gt 0 ]]
