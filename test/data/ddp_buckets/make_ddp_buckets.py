#!/usr/bin/env python3
"""Buckets PyTorch's DistributedDataParallel really builds, as test data for gradsync's bucket
rule (include/gradsync/scenario/step_schedule.hpp, build_buckets).

Trains a GPT-2-shaped model (token embedding; blocks of ln_1, attention QKV and output
projection, ln_2, MLP up and down, all with biases; final norm; untied head without bias) —
the tensors gradsync's transformer preset counts, 12h^2 + 13h per block — with DDP over the
gloo backend on 2 local processes for 3 iterations (the reducer rebuilds its buckets in the
order gradients became ready after the first), and writes what DDP reports
(_get_ddp_logging_data: rebuilt_bucket_sizes, rebuilt_per_bucket_param_indices) for each
model and bucket cap to one JSON file per model here.

Needs torch (Debian: apt-get install python3-torch; run with /usr/bin/python3). The tests
read the committed JSON and do not need torch.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

MODELS = [  # (blocks, hidden, vocab, bucket caps in MiB)
    (4, 256, 1000, (0.5, 2.0)),
    (3, 512, 2000, (1.0, 4.0)),
]


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln_1 = nn.LayerNorm(h)
        self.c_attn = nn.Linear(h, 3 * h)
        self.c_proj = nn.Linear(h, h)
        self.ln_2 = nn.LayerNorm(h)
        self.c_fc = nn.Linear(h, 4 * h)
        self.mlp_proj = nn.Linear(4 * h, h)

    def forward(self, x):
        q = self.c_attn(self.ln_1(x))[..., : x.shape[-1]]
        x = x + self.c_proj(q)
        return x + self.mlp_proj(torch.relu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    def __init__(self, blocks, h, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList([Block(h) for _ in range(blocks)])
        self.ln_f = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)

    def forward(self, tokens):
        x = self.wte(tokens)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def worker(rank, world, blocks, h, vocab, cap_mb, out_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29541"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = Gpt(blocks, h, vocab)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    tokens = torch.randint(0, vocab, (2, 16))
    for _ in range(3):
        opt.zero_grad()
        ddp(tokens).float().sum().backward()
        opt.step()
    if rank == 0:
        d = ddp._get_ddp_logging_data()
        run = {
            "bucket_cap_bytes": int(d["bucket_cap_bytes"]),
            "rebuilt_bucket_sizes": [int(x) for x in d["rebuilt_bucket_sizes"].split(",")],
            "rebuilt_per_bucket_param_indices": [
                [int(i) for i in b.split()] for b in d["rebuilt_per_bucket_param_indices"].split(",")
            ],
        }
        with open(out_path, "w") as f:
            json.dump(run, f)
    dist.destroy_process_group()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for blocks, h, vocab, caps in MODELS:
        doc = {
            "generator": "test/data/ddp_buckets/make_ddp_buckets.py",
            "torch_version": torch.__version__,
            "backend": "gloo",
            "world_size": 2,
            "model": {"blocks": blocks, "hidden": h, "vocab": vocab, "dtype": "fp32",
                      "tie_embeddings": False},
            "first_bucket_bytes": int(dist._DEFAULT_FIRST_BUCKET_BYTES),
            "runs": [],
        }
        for cap in caps:
            tmp = os.path.join(here, ".run.json")
            mp.spawn(worker, args=(2, blocks, h, vocab, cap, tmp), nprocs=2)
            with open(tmp) as f:
                doc["runs"].append(json.load(f))
            os.remove(tmp)
        name = f"gpt2-l{blocks}-h{h}-v{vocab}.json"
        with open(os.path.join(here, name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(name, [r["rebuilt_bucket_sizes"] for r in doc["runs"]], file=sys.stderr)


if __name__ == "__main__":
    main()
