#!/usr/bin/env bash
# examples/slurm on a real Slurm: a one-node cluster (Debian slurm-wlm 22.05 and munge) started
# in a temporary folder with its own slurm.conf, ports and munge socket, then:
#   1. submit.sh runs a 6-point sweep as an array of 4 shards and a dependent merge job;
#   2. one shard is preempted while its points run (scancel: SIGTERM to the task, as at a time
#      limit or a preemption): the shard stops with 143, its running points are not recorded,
#      and the merge that follows reports them missing, never failed (exit 4);
#   3. the cancelled task is requeued (scontrol requeue; made eligible at once) and resumes
#      with --resume; merge.sbatch run again gives every point exactly once, none failed.
# Exit 77 (ctest: skipped, with the reason printed) where it cannot run: not root, or Slurm
# or munge missing.
#
# Usage: GRADSYNC=/path/to/gradsync bash test/cli/slurm_test.sh PROJECT_DIR
set -u
gradsync=${GRADSYNC:?set GRADSYNC to the gradsync executable}
root=$(cd "${1:?usage: GRADSYNC=... $0 PROJECT_DIR}" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "a test Slurm runs its daemons and jobs as root; run as root (CI does)"
for c in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$c" >/dev/null || skip "$c is not installed (Debian: slurm-wlm munge)"
done

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
T=$(mktemp -d /tmp/gradsync-slurm.XXXXXX)
export SLURM_CONF=$T/slurm.conf
cleanup() {
  scontrol shutdown >/dev/null 2>&1
  sleep 1
  for f in "$T"/slurmd.pid "$T"/slurmctld.pid "$T"/munged.pid; do
    [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$T"
}
trap cleanup EXIT
# Waits up to $1 s for the command after it to succeed.
wait_for() {
  local limit=$1
  shift
  local i
  for ((i = 0; i < limit * 5; i++)); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}
dump_logs() { tail -20 "$T"/log/*.log; }

mkdir -p "$T/state" "$T/spool" "$T/log" "$T/work"
head -c 1024 /dev/urandom >"$T/munge.key"
chmod 400 "$T/munge.key"
munged --force --key-file="$T/munge.key" --socket="$T/munge.sock" --pid-file="$T/munged.pid" \
       --log-file="$T/log/munged.log" --seed-file="$T/munged.seed" ||
  skip "munged does not start here: $(tail -2 "$T/log/munged.log" 2>/dev/null)"
host=$(hostname -s)
port=$((20000 + $$ % 20000))
cat >"$SLURM_CONF" <<EOF
ClusterName=gradsynctest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# The array script asks for 8 CPUs and 16 GB per task: the test node says it has them.
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
KillWait=5
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=8 RealMemory=32768 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -c || skip "slurmctld does not start here: $(tail -3 "$T/log/slurmctld.log" 2>/dev/null)"
slurmd || skip "slurmd does not start here: $(tail -3 "$T/log/slurmd.log" 2>/dev/null)"
node_idle() { [[ $(sinfo -h -n "$host" -o %T 2>/dev/null) == idle ]]; }
wait_for 30 node_idle || { dump_logs; skip "the test node never became idle"; }
pass "a one-node Slurm is up ($(slurmctld -V), node $host)"

# 6 points of a few seconds each (the 7B scenario on 1,536 and 2,048 DGX H100 servers: 1.4 to
# 4 s each on 2 cores; the shard to preempt must still be running half a second after its
# first line).
sweep=$T/work/sweep.yaml
out=$T/work/out
cat >"$sweep" <<EOF
base: $root/scenarios/llama-7b-4node-ib.yaml
grid:
  topology_overrides.nodes: [1536, 2048]
  sync.bucket: [25MiB, 100MiB, 400MiB]
EOF
export GRADSYNC=$gradsync  # the sbatch scripts run \${GRADSYNC:-gradsync}
submitted=$(bash "$root/examples/slurm/submit.sh" "$sweep" "$out" 4 2>&1)
array=$(sed -n 's/^submitted sweep array \([0-9][0-9]*\) .*/\1/p' <<<"$submitted")
[[ -n $array ]] && pass "submit.sh: array $array of 4 shards and its merge" ||
  { fail "submit.sh: $submitted"; exit 1; }

# Preempt shard 1 while its points run: once its sweep has started them.
shard_started() { [[ -s $out/slurm-${array}_1.out ]] && grep -q '^sweep:' "$out/slurm-${array}_1.out"; }
wait_for 60 shard_started || { dump_logs; fail "shard 1 never started"; exit 1; }
sleep 0.5
scancel "${array}_1"
queue_empty() { [[ -z $(squeue -h 2>/dev/null) ]]; }
wait_for 120 queue_empty || { squeue; fail "the array and merge did not end"; exit 1; }
log1=$(cat "$out/slurm-${array}_1.out" 2>/dev/null)
if [[ $log1 == *"stopped by signal 15"* ]]; then
  pass "the preempted shard stopped on SIGTERM: $(grep -m1 'stopped by signal' <<<"$log1")"
else
  fail "the preempted shard did not report SIGTERM: $log1"
fi
merge1=$(cat "$out"/slurm-merge-*.out 2>/dev/null)
if [[ $merge1 == *"0 failed"* && $merge1 != *" 0 missing"* ]]; then
  pass "the merge after the preemption reports missing points, none failed: $(head -1 <<<"$merge1")"
else
  fail "the merge after the preemption: $merge1"
fi

# Requeue the cancelled shard (eligible at once, not after Slurm's requeue delay); it resumes.
scontrol requeue "${array}_1" || fail "scontrol requeue ${array}_1"
scontrol update jobid="${array}_1" StartTime=now >/dev/null 2>&1
wait_for 120 queue_empty || { squeue; fail "the requeued shard did not end"; exit 1; }
log1=$(cat "$out/slurm-${array}_1.out")
[[ $log1 == *"sweep: resuming"* ]] && pass "the requeued shard resumed ($(grep -m1 'resuming' <<<"$log1"))" ||
  fail "the requeued shard did not resume: $log1"
if sbatch --wait --output="$out/slurm-merge-again-%j.out" --export=ALL,OUT="$out" \
     "$root/examples/slurm/merge.sbatch" >/dev/null; then
  pass "merge.sbatch after the requeue exits 0: $(head -1 "$out"/slurm-merge-again-*.out)"
else
  fail "merge.sbatch after the requeue: $(cat "$out"/slurm-merge-again-*.out)"
fi
count=$(python3 - "$out/merged/results.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ids = [r["point"] for r in rows]
failed = [r["point"] for r in rows if r.get("error")]
print(f"{len(ids)} {len(set(ids))} {len(failed)}")
EOF
)
[[ $count == "6 6 0" ]] && pass "every point exactly once, none failed (rows, ids, failed: $count)" ||
  fail "merged results (rows, distinct ids, failed): $count"

echo "$passed passed, $failed failed"
((failed == 0))
