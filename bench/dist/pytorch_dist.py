#!/usr/bin/env python3
"""PyTorch's side of bench_dist: the same workloads under the same names, data-parallel over the
ranks of an mpirun job with torch.distributed's gloo backend (PyTorch's CPU backend) and
DistributedDataParallel. Usage: [mpirun -np W] pytorch_dist.py [--threads N] [--reps R], with
MASTER_PORT set to a free port when W > 1. Rank 0 prints one JSON line per workload, as bench_dist.
PyTorch's SyncBatchNorm runs on CUDA only: its rows print "median_us": null."""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def mlp(norm):
    layers, width = [], 784
    for h in (256, 256):
        layers.append(nn.Linear(width, h))
        if norm != "none":
            layers.append(nn.BatchNorm1d(h))
        layers.append(nn.ReLU())
        width = h
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def cnn(norm):
    def n2d(c):
        return [nn.BatchNorm2d(c)] if norm != "none" else []
    return nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                         nn.Conv2d(1, 32, 3, padding=1), *n2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), *n2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 10))


def time_it(name, warmup, reps, fn, rank, world, threads):
    for _ in range(warmup):
        fn()
    us = []
    for _ in range(reps):
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t0) * 1e6)
    us.sort()
    if rank == 0:
        print(json.dumps({"name": name, "ranks": world, "threads": threads, "median_us": us[len(us) // 2],
                          "min_us": us[0], "max_us": us[-1], "reps": reps}), flush=True)


def ddp_step(name, make, norm, global_batch, reps, rank, world, threads):
    if norm == "syncbatch":  # CUDA only in PyTorch
        if rank == 0:
            print(json.dumps({"name": name, "ranks": world, "threads": threads, "median_us": None,
                              "note": "PyTorch's SyncBatchNorm runs on CUDA only"}), flush=True)
        return
    torch.manual_seed(0)
    model = make(norm).train()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's weights and buffers
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(global_batch, 784, generator=g)
    y = torch.randint(0, 10, (global_batch,), generator=g)
    per = global_batch // world
    xs, ys = x[rank * per:(rank + 1) * per].contiguous(), y[rank * per:(rank + 1) * per].contiguous()

    def step():
        loss = F.cross_entropy(model(xs), ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
    time_it(name, 3, reps, step, rank, world, threads)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=30)
    a = p.parse_args()
    if a.threads < 1 or a.reps < 1:
        sys.exit("pytorch_dist.py: --threads and --reps must be at least 1")
    torch.set_num_threads(a.threads)
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    if world > 1:
        port = os.environ.get("MASTER_PORT")
        if not port:
            sys.exit("pytorch_dist.py: set MASTER_PORT to a free TCP port for gloo's rendezvous")
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    for what, make in (("mlp", mlp), ("cnn", cnn)):
        n = sum(p.numel() for p in make("batch").parameters())
        g = torch.ones(n)
        if world > 1:
            time_it(f"allreduce {what} grads {n}", 3, a.reps * 3, lambda: dist.all_reduce(g), rank, world, a.threads)
    for norm in ("none", "batch", "syncbatch"):
        ddp_step(f"ddp step mlp 784-256-256-10 b128 {norm}", mlp, norm, 128, a.reps * 3, rank, world, a.threads)
    for norm in ("none", "batch", "syncbatch"):
        ddp_step(f"ddp step cnn b128 {norm}", cnn, norm, 128, a.reps, rank, world, a.threads)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
