"""normlab.experiments: the normlab command's studies from Python. train, compare, sweep and study
take the command's options as keyword arguments (norms=["none", "batch"] for --norms none,batch;
True for a flag; underscores for dashes), run the command in this process (its own parser checks
them, with its own messages, as ValueError), print its progress as it prints it, write the output
folder exactly as the command does, and return the results read back from it:

    res = normlab.experiments.compare(quick=True, norms=["none", "batch", "layer"], seeds=[0, 1])
    res.summary            # summary.csv as records: one dict per norm (mean, 95% CI, ...)
    res.runs               # runs.csv: one dict per run
    res.dataframe("runs")  # the same as a pandas DataFrame, when pandas is installed

Ctrl-C stops a run as in the command: the current step finishes, the finished runs are written,
then KeyboardInterrupt is raised (a second Ctrl-C ends the process at once, as the command does).
"""
import csv
import os
import sys
import threading
from pathlib import Path

from ._normlab import _experiments

__all__ = ["Results", "run", "train", "compare", "sweep", "study"]

_DEFAULT_OUT = {"train": "out/train", "compare": "out/compare", "sweep": "out/sweep", "study": "out/study"}


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Results:
    """A finished command's output folder: its CSV tables as records (lists of dicts, numbers
    converted), the report's path, the exit status."""

    def __init__(self, command, out, status):
        self.command, self.out, self.status = command, Path(out), status

    def tables(self):
        """The names of the folder's CSV tables ("runs", "summary", "epochs", ...)."""
        return sorted(p.stem for p in self.out.glob("*.csv"))

    def records(self, table):
        """The rows of <out>/<table>.csv as dicts, numbers as int or float."""
        path = self.out / f"{table}.csv"
        if not path.is_file():
            raise KeyError(f"{self.command} wrote no {table}.csv in {self.out} (it has: {', '.join(self.tables())})")
        with open(path, newline="") as f:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]

    def dataframe(self, table):
        """<out>/<table>.csv as a pandas DataFrame (needs python3-pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Results.dataframe needs pandas: apt-get install python3-pandas "
                              "(Results.records gives the same rows as dicts)") from None
        return pandas.read_csv(self.out / f"{table}.csv")

    @property
    def runs(self):
        return self.records("runs")

    @property
    def summary(self):
        return self.records("summary")

    @property
    def report(self):
        """The path of report.md."""
        return self.out / "report.md"

    def __repr__(self):
        return f"Results({self.command!r}, out={str(self.out)!r}, tables={self.tables()})"


def _flags(options):
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        elif isinstance(value, os.PathLike):
            args += [flag, os.fspath(value)]
        else:
            args += [flag, str(value)]
    return args


def _fd_of(stream):
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _run_native(args):
    """run_cli, with the command's stdout and stderr sent to sys.stdout / sys.stderr when those are
    not the process's own (Jupyter's cells): a pipe on fds 1 and 2, read by a thread."""
    if _fd_of(sys.stdout) == 1 and _fd_of(sys.stderr) == 2:
        return _experiments.run_cli(args)
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    saved = os.dup(1), os.dup(2)

    def pump():
        with os.fdopen(read_fd, "r", errors="replace") as r:
            for line in r:
                sys.stdout.write(line)
                sys.stdout.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    os.dup2(write_fd, 1)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    try:
        return _experiments.run_cli(args)
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        reader.join(timeout=10)


def run(command, **options):
    """Runs `normlab <command>` with options as flags; the Results of its output folder."""
    if command not in _DEFAULT_OUT:
        raise ValueError(f"normlab.experiments.run: the command must be one of {', '.join(_DEFAULT_OUT)}, "
                         f"got {command!r}")
    args = [command] + _flags(options)
    status, interrupted = _run_native(args)
    out = options.get("out") or _DEFAULT_OUT[command]
    if interrupted:
        raise KeyboardInterrupt(f"normlab {command} interrupted: the finished runs are in {out}")
    if status != 0:
        raise RuntimeError(f"normlab {' '.join(args)} failed (exit status {status})")
    return Results(command, out, status)


def train(**options):
    """normlab train: one model (see `normlab train --help` for the options)."""
    return run("train", **options)


def compare(**options):
    """normlab compare: every norm over seeds, mean and 95% CI (`normlab compare --help`)."""
    return run("compare", **options)


def sweep(**options):
    """normlab sweep: final accuracy against batch size or learning rate (`normlab sweep --help`)."""
    return run("sweep", **options)


def study(**options):
    """normlab study: compare and sweep in one report (`normlab study --help`)."""
    return run("study", **options)
