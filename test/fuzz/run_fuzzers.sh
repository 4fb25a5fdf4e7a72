#!/usr/bin/env bash
# Runs every libFuzzer harness of test/fuzz for SECONDS each (default 30) on a copy of its seed
# corpus, after replaying its committed regressions (test/fuzz/regressions/<harness>/*).
#
#   test/fuzz/run_fuzzers.sh [SECONDS] [BUILD_DIR]      BUILD_DIR default: build-fuzz
#
# Configures BUILD_DIR with clang-14 and -DGRADSYNC_FUZZ=ON when it has no CMakeCache.txt,
# compiling file by file: CI's check that each file of the libraries the harnesses link
# includes what it uses (CI's other builds are unity builds; 194 s on 2 cores, 109-124 s as
# unity sources, which a BUILD_DIR configured with -DCMAKE_UNITY_BUILD=ON gives); then builds
# the harnesses (-j${FUZZ_JOBS:-2}) and runs FUZZ_JOBS of them at a time. Exit 1 on any crash,
# sanitizer report, leak, timeout (-timeout=10), out-of-memory (-rss_limit_mb=2048),
# ConfigError-contract abort or failed regression; the input that did it goes to
# test/fuzz/crashes/<harness>-<kind>-<sha1>.
# FUZZ_HARNESSES="fuzz_units fuzz_trace" runs a subset; FUZZ_TIMEOUT (s per input, default 10)
# and FUZZ_RSS_MB (default 2048) change the limits; logs are in BUILD_DIR/fuzz-logs/.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-30}
build=${2:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-2}
harnesses=${FUZZ_HARNESSES:-fuzz_units fuzz_topology fuzz_scenario fuzz_sweep fuzz_nccl_tests_log fuzz_trace}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [BUILD_DIR]" >&2; exit 2; }

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++-14 \
        -DGRADSYNC_FUZZ=ON -DGRADSYNC_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >/dev/null || { echo "cmake configure of $build failed" >&2; exit 1; }
elif ! grep -q '^GRADSYNC_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "$build is not configured with -DGRADSYNC_FUZZ=ON (give another BUILD_DIR)" >&2
  exit 1
fi
# shellcheck disable=SC2086
targets=$(printf -- '--target %s ' $harnesses)
# shellcheck disable=SC2086
cmake --build "$build" -j"$jobs" $targets >"$build/fuzz-build.log" 2>&1 ||
  { tail -40 "$build/fuzz-build.log"; echo "build of the harnesses failed" >&2; exit 1; }

crashes=$here/crashes
logs=$build/fuzz-logs
mkdir -p "$crashes" "$logs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
flags=(-timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -print_final_stats=1)

# What a libFuzzer log says went wrong ("" when nothing did).
kind_of() {
  local log=$1
  if grep -q '==gradsync-fuzz==' "$log"; then echo contract
  elif grep -q 'ERROR: LeakSanitizer' "$log"; then echo leak
  elif grep -q 'ERROR: AddressSanitizer' "$log"; then echo asan
  elif grep -q 'runtime error:' "$log"; then echo ubsan
  elif grep -q 'ERROR: libFuzzer: timeout' "$log"; then echo timeout
  elif grep -q 'ERROR: libFuzzer: out-of-memory\|ERROR: libFuzzer: malloc' "$log"; then echo oom
  elif grep -q "terminate called\|uncaught exception" "$log"; then echo exception
  elif grep -q 'libFuzzer: run interrupted' "$log"; then echo interrupted
  else echo crash
  fi
}

# run_one HARNESS: replays, then fuzzes; writes its table row to $work/HARNESS.row and, when it
# fails, what to print about it to $work/HARNESS.failed.
run_one() {
  local h=$1
  local bin=$build/test/fuzz/$h
  local log=$logs/$h.log
  : >"$log"
  local result=ok
  # 1. Regressions: each committed reproducer must now pass.
  local regressions=("$here/regressions/$h"/*)
  if [[ -e ${regressions[0]} ]]; then
    if ! "$bin" "${flags[@]}" "${regressions[@]}" </dev/null >>"$log" 2>&1; then
      result="FAIL regression ($(kind_of "$log"))"
    fi
  fi
  # 2. Fuzzing on a copy of the seeds (new inputs found stay out of the tree).
  local execs=0 secs=0
  if [[ $result == ok ]]; then
    local corpus=$work/$h
    mkdir -p "$corpus"
    cp "$here/corpus/$h"/* "$corpus"/ 2>/dev/null
    local start=$SECONDS
    timeout --signal=KILL $((seconds + 120)) "$bin" "${flags[@]}" -max_total_time="$seconds" \
      -artifact_prefix="$work/$h-" "$corpus" </dev/null >>"$log" 2>&1
    local rc=$?
    secs=$((SECONDS - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=${execs:-0}
    if ((rc != 0)); then
      local kind
      kind=$(kind_of "$log")
      ((rc == 137)) && kind=hung
      result="FAIL $kind"
      for a in "$work/$h-"*; do
        [[ -f $a ]] || continue
        local dest
        dest=$crashes/$h-$kind-$(sha1sum "$a" | cut -c1-12)
        cp "$a" "$dest"
        result+=" -> ${dest#"$root"/}"
      done
    fi
  fi
  if [[ $result != ok ]]; then
    {
      echo "---- $h: $result (excerpt of $log)"
      grep -m8 -E '==gradsync-fuzz==|ERROR: |runtime error:|terminate called|what\(\)|SUMMARY:' "$log"
      grep -v '^#[0-9]' "$log" | grep -A3 '^MS: \|^Running: ' | head -8
    } >"$work/$h.failed"
  fi
  local rate=0
  ((secs > 0)) && rate=$((execs / secs))
  printf '%-22s %12s %8s %10s  %s\n' "$h" "$execs" "$secs" "$rate" "$result" >"$work/$h.row"
}

# The harnesses run FUZZ_JOBS at a time, each fuzzing on one core (libFuzzer's default).
running=0
for h in $harnesses; do
  run_one "$h" &
  if ((++running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0
for h in $harnesses; do
  if [[ -f $work/$h.failed ]]; then
    failed=1
    cat "$work/$h.failed"
  elif [[ ! -f $work/$h.row ]]; then  # its job ended before writing a result
    failed=1
    echo "---- $h: FAIL no result (see $logs/$h.log)"
  fi
done
printf '%-22s %12s %8s %10s  %s\n' harness executions seconds execs/s result
for h in $harnesses; do
  [[ -f $work/$h.row ]] && cat "$work/$h.row"
done
exit "$failed"
