#!/usr/bin/env bash
# V1 of gradsync's validation (README.md, How the simulation works): SimGrid's SMPI as a peer
# for ring AllReduce.
#
# For each rank count N it builds an ideal star (N hosts, one switch, every host link
# full duplex at BANDWIDTH with LATENCY), runs SMPI's MPI_Allreduce with the logical-ring
# algorithm (smpi/allreduce:lr) under SimGrid's neutral network model, and checks, per size:
#   1. SMPI against the ring's closed form (Patarasuk & Yuan, JPDC 2009),
#      T = 2(n-1)·α + 2(n-1)/n·S/B with α = 2L (a hop gpu -> switch -> gpu crosses two
#      links), within 1 %;
#   2. `gradsync bench` (ring, on the same star written as explicit YAML: software none,
#      efficiency 1, switch latency 0) against SMPI, within 1 %.
# Check 2 runs only when $GRADSYNC names a gradsync that has the `bench` subcommand;
# otherwise (or with --smpi-only) the script runs check 1 alone.
#
# SMPI is not exactly the closed form: every MPI message carries a 16-byte envelope
# (smpi_request.cpp: payload = size + 16), so lr takes 2(n-1)·α + 2(n-1)·(S/n + 16 B)/B.
# Both forms are printed; the difference is below 3e-4 for S >= 1 MiB.
#
# Usage: smpi_vs_gradsync.sh [--smpi-only] [--models] [--ranks "4 16 64"]
#            [--sizes "1048576 67108864 1073741824"] [--bandwidth-GBps 25] [--latency-us 1]
#            [--op noop|sum] [--keep DIR]
#   --models     also run SMPI under smpirun's default model, LV08, CM02 and CM02 with
#                crosstraffic 0 (weight-S and TCP-gamma left at defaults), and print
#                their ratio to the closed form (report only, asserts nothing).
#   --op sum     reduce with MPI_SUM for real (same simulated time; ~15 s more wall time at
#                N = 64, 1 GiB). Default noop: a user-defined no-op reduction.
#   --keep DIR   keep the generated platforms, YAML, logs and results in DIR.
# Environment: GRADSYNC (gradsync binary), SMPICC, SMPIRUN (default: from PATH).
# Exit: 0 all checks passed, 1 a check failed or a run broke, 2 bad usage,
#       77 skipped (smpicc, smpirun or python3 missing).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ranks="4 16 64"
sizes="1048576 67108864 1073741824"
bw_gbps=25
lat_us=1
smpi_only=0
models=0
op=noop
keep=""

usage() { sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --smpi-only) smpi_only=1 ;;
    --models) models=1 ;;
    --ranks) ranks=${2:?}; shift ;;
    --sizes) sizes=${2:?}; shift ;;
    --bandwidth-GBps) bw_gbps=${2:?}; shift ;;
    --latency-us) lat_us=${2:?}; shift ;;
    --op) op=${2:?}; shift ;;
    --keep) keep=${2:?}; shift ;;
    -h | --help) usage ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
[[ $op == noop || $op == sum ]] || { echo "$0: --op takes noop or sum" >&2; exit 2; }
for x in $ranks; do
  [[ $x =~ ^[1-9][0-9]*$ && $x -ge 2 ]] || { echo "$0: bad rank count '$x'" >&2; exit 2; }
  for s in $sizes; do
    # lr sends S/n per step only if the float count divides evenly; otherwise it runs the
    # remainder through another algorithm and stops being a plain ring.
    if ! [[ $s =~ ^[1-9][0-9]*$ ]] || (( s % (4 * x) != 0 )); then
      echo "$0: size '$s' must be a multiple of 4·N = $((4 * x)) bytes" >&2
      exit 2
    fi
  done
done
read -ra size_list <<<"$sizes"
[[ $bw_gbps =~ ^[0-9]+([.][0-9]+)?$ && $lat_us =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "$0: --bandwidth-GBps and --latency-us take plain decimal numbers" >&2; exit 2; }

smpicc=${SMPICC:-$(command -v smpicc || true)}
smpirun=${SMPIRUN:-$(command -v smpirun || true)}
for tool in "$smpicc" "$smpirun" "$(command -v python3 || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "SKIP: smpicc, smpirun or python3 not found (Debian: simgrid, libsimgrid-dev)"
    exit 77
  fi
done

if [[ $smpi_only -eq 0 ]]; then
  if [[ -z ${GRADSYNC:-} ]]; then
    echo "note: GRADSYNC not set: SMPI-only mode (SMPI against the closed form)"
    smpi_only=1
  elif ! "$GRADSYNC" --help 2>/dev/null | grep -Eq '^[[:space:]]+bench([[:space:]]|$)'; then
    echo "note: $GRADSYNC has no 'bench' subcommand yet: SMPI-only mode"
    smpi_only=1
  fi
fi

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-smpi.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

start_s=$(date +%s.%N)
"$smpicc" -O2 -o "$work/allreduce_bench" "$here/allreduce_bench.c" 2>"$work/smpicc.log" ||
  { echo "FAIL: smpicc could not build allreduce_bench.c:"; cat "$work/smpicc.log"; exit 1; }

# Every option that moves SMPI away from the ideal α-β network the formula assumes.
common_cfg=(
  --cfg=smpi/allreduce:lr
  --cfg=smpi/simulate-computation:no        # no benchmarking of the host's real CPU time
  --cfg=smpi/shared-malloc-blocksize:1073741824
  --cfg=smpi/wtime:0                        # MPI_Wtime would inject 10 ns of simulated time
  --log=root.thres:warning                  # keep xbt_cfg's INFO lines out of the logs
)
neutral_cfg=(
  --cfg=network/model:CM02 --cfg=network/crosstraffic:0
  --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0
)

results="$work/results.txt"   # kind N bytes time_us
: >"$results"

# run_smpi KIND N CFG...: one smpirun for every size; appends "KIND N bytes time_us" rows.
run_smpi() {
  local kind=$1 n=$2
  shift 2
  local log="$work/smpi-$kind-$n.log" out="$work/smpi-$kind-$n.out"
  if ! "$smpirun" -np "$n" -platform "$work/star-$n.xml" -hostfile "$work/star-$n.hosts" \
      "${common_cfg[@]}" "$@" "$work/allreduce_bench" --op "$op" "${size_list[@]}" >"$out" 2>"$log"; then
    # No rows: the neutral run's checks then fail; other models are report only.
    echo "error: smpirun ($kind, N=$n) failed; its log:"
    tail -n 30 "$log"
    return 0
  fi
  awk -v k="$kind" -v n="$n" 'NF == 2 && $1 ~ /^[0-9]+$/ { print k, n, $1, $2 }' "$out" >>"$results"
}

for n in $ranks; do
  "$here/star_platform.sh" "$n" "${bw_gbps}GBps" "${lat_us}us" \
    "$work/star-$n.xml" "$work/star-$n.hosts"
  run_smpi neutral "$n" "${neutral_cfg[@]}"
  if [[ $models -eq 1 ]]; then
    run_smpi smpirun-default "$n"
    run_smpi LV08 "$n" --cfg=network/model:LV08
    run_smpi CM02-only "$n" --cfg=network/model:CM02
    run_smpi CM02-crosstraffic0 "$n" --cfg=network/model:CM02 --cfg=network/crosstraffic:0
  fi
  if [[ $smpi_only -eq 0 ]]; then
    # The same star for gradsync: latency on each of the two links of a hop, none in the switch.
    cat >"$work/star-$n.yaml" <<YAML
name: star-$n
software: none
devices:
  - {name: "gpu[0-$((n - 1))]", kind: gpu}
  - {name: sw0, kind: switch, latency: 0s}
links:
  - {between: ["gpu[0-$((n - 1))]", sw0], fabric: infiniband, bandwidth: ${bw_gbps}GB/s, latency: ${lat_us}us, efficiency: 1}
YAML
    for s in "${size_list[@]}"; do
      if ! "$GRADSYNC" bench "$work/star-$n.yaml" --op allreduce --algo ring \
          --min "${s}B" --max "${s}B" --json >"$work/gradsync-$n-$s.json" \
          2>"$work/gradsync-$n-$s.log"; then
        echo "error: gradsync bench (N=$n, $s B) failed:"   # its check fails below
        tail -n 20 "$work/gradsync-$n-$s.log"
      fi
    done
  fi
done
end_s=$(date +%s.%N)

python3 - "$results" "$work" "$ranks" "$sizes" "$bw_gbps" "$lat_us" "$smpi_only" \
  "$start_s" "$end_s" <<'PY'
import json, os, sys

results, work, ranks, sizes, bw, lat, smpi_only, t0, t1 = sys.argv[1:]
B = float(bw) * 1e9          # bytes/s per link, per direction
L = float(lat) * 1e-6        # s per link
alpha = 2 * L                # gpu -> switch -> gpu: two links
TOL = 0.01
ENVELOPE = 16                # bytes SMPI adds to every message

rows = {}
with open(results) as f:
    for line in f:
        kind, n, s, t = line.split()
        rows[(kind, int(n), int(s))] = float(t)

def formula_us(n, s):
    return (2 * (n - 1) * alpha + 2 * (n - 1) / n * s / B) * 1e6

def smpi_formula_us(n, s):
    return (2 * (n - 1) * alpha + 2 * (n - 1) * (s / n + ENVELOPE) / B) * 1e6

def gradsync_rows(doc):
    # bench --json: a list of row objects; accept them nested under any key as well.
    if isinstance(doc, dict):
        if "bytes" in doc and "time_us" in doc:
            yield doc
        for v in doc.values():
            yield from gradsync_rows(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from gradsync_rows(v)

def size_name(s):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s % f == 0:
            return f"{s // f} {unit}"
    return f"{s} B"

passed = failed = 0
def check(ok, what):
    global passed, failed
    passed += ok
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'}  {what}")

print(f"star: {bw} GB/s and {lat} us per host link (full duplex), switch ideal; alpha = 2L = "
      f"{alpha * 1e6:g} us per hop; tolerance {TOL:.0%}")
print("closed form  T = 2(n-1)·α + 2(n-1)/n·S/B;  SMPI form adds its 16-byte envelope per message")
for n in map(int, ranks.split()):
    for s in map(int, sizes.split()):
        f = formula_us(n, s)
        fe = smpi_formula_us(n, s)
        tag = f"N={n:<3} {size_name(s):>7}"
        t = rows.get(("neutral", n, s))
        if t is None:
            check(False, f"{tag}  SMPI lr: no result")
            continue
        check(abs(t - f) / f < TOL,
              f"{tag}  SMPI lr {t:12.4f} us  closed form {f:12.4f} us  ({(t - f) / f:+.2e})"
              f"  SMPI form {fe:12.4f} us ({(t - fe) / fe:+.1e})")
        if smpi_only == "1":
            continue
        path = os.path.join(work, f"gradsync-{n}-{s}.json")
        g = None
        try:
            with open(path) as fh:
                for row in gradsync_rows(json.load(fh)):
                    if abs(float(row["bytes"]) - s) < 0.5:
                        g = row
        except (OSError, ValueError) as e:
            check(False, f"{tag}  gradsync bench: unreadable JSON ({e})")
            continue
        if g is None:
            check(False, f"{tag}  gradsync bench: no row with bytes = {s}")
            continue
        gt = float(g["time_us"])
        check(abs(gt - t) / t < TOL,
              f"{tag}  gradsync {gt:12.4f} us  SMPI {t:12.4f} us  ({(gt - t) / t:+.2e})"
              f"  vs closed form {(gt - f) / f:+.2e}  busbw {float(g['busbw_GBps']):.3f} GB/s")

others = sorted({k for (k, _, _) in rows if k != "neutral"})
if others:
    print("\nSMPI under other network models (time / closed form; report only):")
    print(f"{'N':>4} {'size':>8} " + " ".join(f"{k:>19}" for k in ["neutral"] + others))
    for n in map(int, ranks.split()):
        for s in map(int, sizes.split()):
            f = formula_us(n, s)
            cells = [rows.get((k, n, s)) for k in ["neutral"] + others]
            print(f"{n:>4} {size_name(s):>8} " +
                  " ".join(f"{c / f:19.4f}" if c is not None else f"{'-':>19}" for c in cells))

print(f"\nwall time {float(t1) - float(t0):.1f} s")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
