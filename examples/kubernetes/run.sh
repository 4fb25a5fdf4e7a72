#!/usr/bin/env bash
# Runs the sweep Job, waits for it, then runs the merge Job and prints its log.
#
#   bash examples/kubernetes/run.sh            # in the namespace of the gradsync-results PVC
#
# Kubernetes has no dependency between Jobs, so this script is the dependency: it waits for
# the Indexed Job to complete (every index succeeded) before it starts the merge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kubectl delete job gradsync-sweep gradsync-merge --ignore-not-found
kubectl apply -f "$here/sweep-job.yaml"
# (if an index keeps failing past backoffLimit, the Job fails and this wait runs into its
# timeout: look at `kubectl logs job/gradsync-sweep`.)
kubectl wait --for=condition=complete job/gradsync-sweep --timeout=24h
kubectl apply -f "$here/merge-job.yaml"
kubectl wait --for=condition=complete job/gradsync-merge --timeout=1h || true
kubectl logs job/gradsync-merge
