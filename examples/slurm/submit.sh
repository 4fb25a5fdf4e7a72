#!/usr/bin/env bash
# Runs a gradsync sweep on Slurm as a job array of N shards, then merges the shards in a job
# that starts when every array task has ended (whatever its exit code).
#
#   bash examples/slurm/submit.sh examples/sweeps/fabric-scaling.yaml /shared/sweeps/fabric 4
#
# OUT must be on a file system every node sees (NFS, Lustre, GPFS). Each shard writes its own
# folder OUT/shard-I (never share one folder between shards), each point as it finishes
# (temp file + rename, so nothing is lost or torn when a task is killed); the merge job writes
# OUT/merged/results.csv and results.jsonl with every point exactly once.
#
# Resubmitting the same command after a crash, a time limit or a preemption continues where
# each shard stopped (the array runs `sweep --resume`): finished points are not run again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sweep=$(realpath "${1:?usage: submit.sh SWEEP.yaml OUT_DIR [SHARDS]}")
out=$(realpath -m "${2:?usage: submit.sh SWEEP.yaml OUT_DIR [SHARDS]}")
shards=${3:-4}
mkdir -p "$out"

# Shards count from 0: --array=0-(N-1) gives SLURM_ARRAY_TASK_ID 0 … N-1 and
# SLURM_ARRAY_TASK_COUNT N, exactly what `gradsync sweep --shard I/N` takes.
array=$(sbatch --parsable --array=0-$((shards - 1)) --output="$out/slurm-%A_%a.out" \
               --export=ALL,SWEEP="$sweep",OUT="$out" "$here/sweep-array.sbatch")
array=${array%%;*}  # --parsable prints "jobid[;cluster]"
# afterany, not afterok: a shard whose points failed (exit 4) or that died still lets the
# merge run; the merge then reports failed and missing points (and exits 4 itself).
sbatch --dependency=afterany:"$array" --output="$out/slurm-merge-%j.out" \
       --export=ALL,OUT="$out" "$here/merge.sbatch"
echo "submitted sweep array $array ($shards shards) and its merge; results: $out/merged/results.csv"
