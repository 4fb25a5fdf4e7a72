#!/usr/bin/env python3
"""A small trace in the Kineto format of torch 2.x, written by hand (no torch needed), for the
parser of `gradsync import-trace`: torch 2.x cannot run on the machines the test data was made
on, so this file follows the schema PyTorch writes (field and event names as in traces of DDP
over NCCL) with invented, round times (an all-reduce kernel of 1 MiB takes 40 us, near what
nccl-tests reports on 8 H100s). It is a format fixture, not a measurement.

What it holds: 2 profiled steps of a model of two Linear(512, 512) layers under DDP on 8 GPUs
(Group size 8), fp32 gradients, record_shapes=True:
  - main thread (pid 4242, tid 4242): ProfilerStep#N (user_annotation), Optimizer.zero_grad#,
    DistributedDataParallel.forward, the loss, Optimizer.step#;
  - the autograd engine's device thread (tid 4250): the backward functions wrapped in
    "autograd::engine::evaluate_function: ...", AccumulateGrad with the Input Dims of each
    gradient on the inner torch::autograd::AccumulateGrad op, and DDP's launches
    c10d::allreduce_ with record_param_comms inside (Collective name, In msg nelems, ...);
  - GPU 0 (pid 0): compute kernels on stream 7 and ncclDevKernel_AllReduce kernels on stream 20.
DDP's buckets: l2.bias + l2.weight (262656 elements, the first bucket closes at >= 1 MiB),
then l1.bias + l1.weight. Forward ops and backward functions carry autograd's "Sequence
number" (a forward op and the backward function made for it share one): l1's linear and
addmm, l2's, the loss's sum; so l1's forward is 1200 us (forward start to l2's linear) and
l2's 1900 us (to the first backward function, the loss included).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN, BWD, PID = 4242, 4250, 4242
events = []


def cpu(name, ts, dur, tid=MAIN, cat="cpu_op", **args):
    events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid,
                   "ts": ts, "dur": dur, "args": args})


def gpu(name, ts, dur, stream, **args):
    events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                   "ts": ts, "dur": dur, "args": dict(device=0, stream=stream, **args)})


def comms(n):
    return {"Collective name": "allreduce", "In msg nelems": n, "Out msg nelems": n,
            "Group size": 8, "dtype": "Float", "Process Group Name": "0",
            "Process Group Description": "default_pg"}


def step(k, t0):
    cpu(f"ProfilerStep#{k}", t0, 9000.0, cat="user_annotation")
    cpu("Optimizer.zero_grad#SGD.zero_grad", t0 + 10.0, 40.0, cat="user_annotation")
    cpu("DistributedDataParallel.forward", t0 + 100.0, 2900.0, cat="user_annotation")
    q = 100 * k  # autograd sequence numbers of this step's forward ops and backward functions
    cpu("aten::linear", t0 + 200.0, 1000.0, **{"Input Dims": [[64, 512], [512, 512], [512]],
                                               "Sequence number": q + 1})
    cpu("aten::addmm", t0 + 220.0, 950.0, **{"Sequence number": q + 1})
    cpu("aten::linear", t0 + 1300.0, 1000.0, **{"Input Dims": [[64, 512], [512, 512], [512]],
                                                "Sequence number": q + 2})
    cpu("aten::addmm", t0 + 1320.0, 950.0, **{"Sequence number": q + 2})
    gpu("ampere_sgemm_64x64_nn", t0 + 250.0, 900.0, 7)
    gpu("ampere_sgemm_64x64_nn", t0 + 1350.0, 900.0, 7)
    cpu("aten::sum", t0 + 3050.0, 50.0, **{"Sequence number": q + 3})
    b = t0 + 3200.0  # backward starts
    w = "autograd::engine::evaluate_function: "
    seq = {"Fwd thread id": 1}
    cpu(w + "SumBackward0", b, 100.0, tid=BWD, **{"Sequence number": q + 3}, **seq)
    cpu(w + "AddmmBackward0", b + 100.0, 1500.0, tid=BWD, **{"Sequence number": q + 2}, **seq)
    for i, (n, dims) in enumerate(((512, [512]), (262144, [512, 512]))):  # l2.bias, l2.weight
        s = b + 1600.0 + 200.0 * i
        cpu(w + "torch::autograd::AccumulateGrad", s, 150.0, tid=BWD)
        cpu("torch::autograd::AccumulateGrad", s + 10.0, 40.0, tid=BWD, **{"Input Dims": [dims]})
    cpu("c10d::allreduce_", b + 1760.0 + 200.0, 30.0, tid=BWD,
        **{"Input Dims": [[[262656]], [], [], [], []]})
    cpu("record_param_comms", b + 1965.0, 20.0, tid=BWD, **comms(262656))
    gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        b + 2000.0, 40.0, 20, **comms(262656))
    cpu(w + "AddmmBackward0", b + 2000.0, 1500.0, tid=BWD, **{"Sequence number": q + 1}, **seq)
    for i, (n, dims) in enumerate(((512, [512]), (262144, [512, 512]))):  # l1.bias, l1.weight
        s = b + 3500.0 + 200.0 * i
        cpu(w + "torch::autograd::AccumulateGrad", s, 150.0, tid=BWD)
        cpu("torch::autograd::AccumulateGrad", s + 10.0, 40.0, tid=BWD, **{"Input Dims": [dims]})
    cpu("c10d::allreduce_", b + 3860.0, 30.0, tid=BWD,
        **{"Input Dims": [[[262656]], [], [], [], []]})
    cpu("record_param_comms", b + 3865.0, 20.0, tid=BWD, **comms(262656))
    gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        b + 3900.0, 40.0, 20, **comms(262656))
    cpu("Optimizer.step#SGD.step", b + 5200.0, 300.0, cat="user_annotation")


step(3, 1000.0)
step(4, 11000.0)
doc = {
    "schemaVersion": 1,
    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8,
                        "pg_count": 1, "pg_config": [{"pg_name": "0", "ranks": list(range(8))}]},
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
    "traceEvents": events,
    "traceName": "kineto-ddp-2x-linear512-rank0.json",
}
with open(os.path.join(HERE, "kineto-ddp-2x-linear512-rank0.json"), "w") as f:
    json.dump(doc, f, indent=0)
    f.write("\n")
