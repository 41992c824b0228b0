"""normlab.experiments: the command's studies from Python write the folder the command writes, and
return its tables as records; bad options are the command's own messages as ValueError; Ctrl-C
stops a run as in the command and raises KeyboardInterrupt after the finished runs are written."""
import os
import signal
import subprocess
import sys
import threading

import pytest

import normlab
from normlab import experiments


def test_compare_returns_the_tables_it_wrote(tmp_path, capfd):
    out = tmp_path / "compare"
    res = experiments.compare(quick=True, norms=["none", "batch"], seeds=[0, 1], out=out, epochs=1)
    assert res.out == out and (out / "report.md").is_file() and res.report == out / "report.md"
    assert {"runs", "summary", "epochs", "steps"} <= set(res.tables())
    runs = res.runs
    assert [(r["norm"], r["seed"]) for r in runs] == [("none", 0), ("none", 1), ("batch", 0), ("batch", 1)]
    assert all(isinstance(r["final_test_acc"], float) and 0 <= r["final_test_acc"] <= 1 for r in runs)
    summary = {r["norm"]: r for r in res.summary}
    assert summary["none"]["runs"] == 2
    mean = sum(r["final_test_acc"] for r in runs if r["norm"] == "batch") / 2
    assert summary["batch"]["test_acc_mean"] == pytest.approx(mean, rel=1e-6)
    assert "compare: norm batch, seed 1" in capfd.readouterr().out  # the command's progress
    with pytest.raises(KeyError, match="no nothing.csv"):
        res.records("nothing")


def test_the_folder_is_the_one_the_command_writes(tmp_path):
    exe = os.environ.get("NORMLAB_BIN")
    if not exe:
        pytest.skip("NORMLAB_BIN (the normlab command, set by CTest) is not set")
    experiments.train(quick=True, norm="layer", epochs=1, out=tmp_path / "py")
    subprocess.run([exe, "train", "--quick", "--norm", "layer", "--epochs", "1", "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    for name in ("epochs.csv", "steps.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    a = normlab.load_file(tmp_path / "py" / "model.safetensors")
    b = normlab.load_file(tmp_path / "cli" / "model.safetensors")
    assert all((a[k].numpy() == b[k].numpy()).all() for k in a)


def test_bad_options_are_the_commands_messages():
    with pytest.raises(ValueError, match="--norms"):
        experiments.compare(quick=True, norms=["none", "weird"])
    with pytest.raises(ValueError, match="not-a-flag|not expected|extra"):
        experiments.compare(quick=True, not_a_flag=3)
    with pytest.raises(ValueError, match="--epochs"):
        experiments.train(quick=True, epochs=-2)
    with pytest.raises(ValueError, match="one of train, compare, sweep, study"):
        experiments.run("format-disk")


def test_ctrl_c_stops_the_run_and_raises_keyboard_interrupt(tmp_path):
    # SIGINT after a moment, as Ctrl-C in a terminal or Jupyter's interrupt does.
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match="interrupted"):
            experiments.compare(quick=True, norms=["none", "batch", "layer"], seeds=list(range(40)),
                                epochs=20, out=tmp_path / "stopped")
    finally:
        timer.cancel()
    assert (tmp_path / "stopped" / "report.md").is_file()  # the finished runs were written
    # Python's own Ctrl-C handling is back afterwards.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_results_as_a_pandas_dataframe(tmp_path):
    pandas = pytest.importorskip("pandas")
    res = experiments.compare(quick=True, norms=["none", "layer"], seeds=[0], epochs=1, out=tmp_path / "c")
    df = res.dataframe("runs")
    assert isinstance(df, pandas.DataFrame) and list(df["norm"]) == ["none", "layer"]
    assert df["final_test_acc"].tolist() == pytest.approx([r["final_test_acc"] for r in res.runs])
