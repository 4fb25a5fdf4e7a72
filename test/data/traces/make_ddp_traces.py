#!/usr/bin/env python3
"""Real PyTorch profiler traces of DDP training steps, as test data for `gradsync import-trace`.

Trains the GPT-2-shaped model of ../ddp_buckets/make_ddp_buckets.py (the tensors gradsync's
transformer layout counts) with DistributedDataParallel over the gloo backend on 2 local
processes, profiles 3 steps with torch.profiler (schedule: wait 1, warmup 1, active 3, so the
reducer has rebuilt its buckets in gradient-ready order), and writes for each bucket cap:
  gpt2-l4-h256-v1000-cap<MiB>-rank0.json[.gz]  rank 0's trace (prof.export_chrome_trace)
  gpt2-l4-h256-v1000-cap<MiB>-ddp.json         what DDP itself reports (_get_ddp_logging_data:
                                               rebuilt_bucket_sizes), the ground truth
The second cap's trace is gzipped, as users often store them.

Needs torch (Debian: apt-get install python3-torch; run with /usr/bin/python3). The tests read
the committed files and do not need torch. Debian's torch 1.13 is built without Kineto, so its
traces are the legacy format: a JSON list of complete events with name, ts, dur (microseconds)
and tid, and no args (no shapes, no message sizes).
"""
import gzip
import json
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ddp_buckets"))
from make_ddp_buckets import Gpt  # noqa: E402

BLOCKS, HIDDEN, VOCAB = 4, 256, 1000
BATCH, SEQ = 8, 64
CAPS_MIB = (0.5, 2.0)
WORLD = 2


def worker(rank, world, cap_mb, stem):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29561"
    torch.set_num_threads(1)  # two ranks share this machine's cores
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    ddp = nn.parallel.DistributedDataParallel(Gpt(BLOCKS, HIDDEN, VOCAB), bucket_cap_mb=cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3)) as prof:
        for _ in range(5):
            opt.zero_grad()
            ddp(tokens).float().sum().backward()
            opt.step()
            prof.step()
    if rank == 0:
        prof.export_chrome_trace(stem + "-rank0.json")
        d = ddp._get_ddp_logging_data()
        truth = {
            "generator": "test/data/traces/make_ddp_traces.py",
            "torch_version": torch.__version__,
            "backend": "gloo",
            "world_size": world,
            "model": {"blocks": BLOCKS, "hidden": HIDDEN, "vocab": VOCAB, "dtype": "fp32"},
            "batch": BATCH, "seq_len": SEQ,
            "bucket_cap_bytes": int(d["bucket_cap_bytes"]),
            "rebuilt_bucket_sizes": [int(x) for x in d["rebuilt_bucket_sizes"].split(",")],
        }
        with open(stem + "-ddp.json", "w") as f:
            json.dump(truth, f, indent=1)
            f.write("\n")
    dist.destroy_process_group()


def main():
    for i, cap in enumerate(CAPS_MIB):
        stem = os.path.join(HERE, f"gpt2-l{BLOCKS}-h{HIDDEN}-v{VOCAB}-cap{cap:g}")
        mp.spawn(worker, args=(WORLD, cap, stem), nprocs=WORLD)
        if i == 1:
            with open(stem + "-rank0.json", "rb") as src, gzip.open(stem + "-rank0.json.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(stem + "-rank0.json")
        print(stem, file=sys.stderr)


if __name__ == "__main__":
    main()
