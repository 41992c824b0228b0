"""The run file of the PyTorch protocol scripts: rewritten after every run, so a stopped script keeps
what it finished, and --resume skips the runs a file already holds.

The file is JSON: {"torch", "threads", "wall_seconds" (summed over the script's invocations),
"args", "runs": [{"norm", "batch_size", "seed", ...}, ...], ...}. Each write goes to a temporary
name in the same folder and is renamed over the file, so it is never half written.
"""
import json
import os
import sys
import time


SWEPT = ("norms", "batch_sizes", "seeds", "shard")  # may differ between invocations that share a file


def add_arguments(p):
    """--out, --resume and --shard, for an argparse parser."""
    p.add_argument("--out", help="write the runs as JSON here (rewritten after every run)")
    p.add_argument("--resume", action="store_true", help="keep the runs --out holds and run only the others")
    p.add_argument("--shard", default="0/1", metavar="K/N",
                   help="run only runs K, K+N, K+2N, ... of the sweep (counted from 0 in the order norm, batch, "
                        "seed), for N processes side by side, each with its own --out")


def parse_shard(p, a):
    """Checks --shard K/N and stores it as the pair (K, N)."""
    try:
        k, n = (int(x) for x in a.shard.split("/"))
    except ValueError:
        p.error(f"--shard is K/N with whole numbers, got {a.shard!r}")
    if not 0 <= k < n:
        p.error(f"--shard K/N needs 0 <= K < N, got {a.shard!r}")
    a.shard = (k, n)


class RunFile:
    """Holds the runs of one --out file; `done(norm, batch, seed)` tells which to skip.

    A resumed file must have been written with the same arguments but for the norms, batch sizes
    and seeds, so that every run in it is one of this protocol's."""

    def __init__(self, path, resume, header, args):
        self.path, self.header = path, dict(header)
        self.args = {k: v for k, v in vars(args).items() if k not in ("out", "resume")}
        self.shard = args.shard
        self.runs, self.previous_wall = [], 0.0
        if resume and path and os.path.exists(path):
            with open(path) as f:
                old = json.load(f)
            same = lambda a: {k: v for k, v in a.items() if k not in SWEPT}
            if same(old.get("args", {})) != same(self.args):
                sys.exit(f"--resume: {path} was written with other arguments:\n  {old.get('args')}\n"
                         f"this run has\n  {self.args}")
            self.runs, self.previous_wall = old["runs"], old["wall_seconds"]
        self.start = time.perf_counter()

    def skip(self, index, norm, batch, seed):
        """True for a run of another shard, or one the file already holds (said on stderr)."""
        k, n = self.shard
        if index % n != k:
            return True
        if self.done(norm, batch, seed):
            print(f"pytorch: norm {norm}, batch {batch}, seed {seed}: kept from {self.path}", file=sys.stderr)
            return True
        return False

    def done(self, norm, batch, seed):
        return any((r["norm"], r["batch_size"], r["seed"]) == (norm, batch, seed) for r in self.runs)

    def wall(self):
        return self.previous_wall + time.perf_counter() - self.start

    def add(self, run):
        self.runs.append(run)
        self.write()

    def write(self):
        if not self.path:
            return
        tmp = f"{self.path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({**self.header, "wall_seconds": self.wall(), "args": self.args, "runs": self.runs}, f,
                      indent=1)
        os.replace(tmp, self.path)
