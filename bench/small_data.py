"""normlab with its defaults beside scikit-learn's MLP defaults on four small data sets.

scikit-learn ships iris, wine, breast cancer (classification) and diabetes (regression). Each is
split once with train_test_split(test_size=0.2, random_state=0, stratified for classification)
and written as train.csv and test.csv (a header row, the label column "target"); normlab trains
on train.csv with no other flag than the label (and --task regression for diabetes) and is scored
on test.csv; scikit-learn's MLPClassifier() / MLPRegressor() with their defaults (random_state=0)
train on the same rows, as they come and after a StandardScaler (normlab standardizes its inputs).
Prints a Markdown table: test accuracy in %, or R² for diabetes.

Usage: python3 bench/small_data.py BUILD_DIR OUT_DIR (bench/small_data.sh installs what it needs).
"""
import csv
import json
import os
import subprocess
import sys
import warnings

from sklearn import datasets
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore")  # scikit-learn's "did not converge" at its default max_iter


def write(path, X, y, names, regression):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names + ["target"])
        for xi, yi in zip(X, y):
            w.writerow([repr(float(v)) for v in xi] + [repr(float(yi)) if regression else int(yi)])


def normlab_score(build, out, name, regression):
    folder = os.path.join(out, name, "normlab")
    cmd = [os.path.join(build, "experiments", "normlab"), "train", "--csv", os.path.join(out, name, "train.csv"),
           "--csv-test", os.path.join(out, name, "test.csv"), "--label", "target", "--quiet", "--out", folder]
    if regression:
        cmd[2:2] = ["--task", "regression"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(folder, "manifest.json")) as f:
        cfg = json.load(f)["config"]["config"]
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:  # the checkpoint's metadata
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    best = int(header["__metadata__"].get("best_epoch", 0))
    with open(os.path.join(folder, "epochs.csv")) as f:
        epochs = list(csv.DictReader(f))
    final = next((e for e in epochs if int(e["epoch"]) == best), epochs[-1])
    return float(final["test_r2" if regression else "test_acc"]), cfg, best


def main():
    build, out = sys.argv[1], sys.argv[2]
    rows = []
    for name in ["iris", "wine", "breast_cancer", "diabetes"]:
        d = getattr(datasets, "load_" + name)()
        regression = name == "diabetes"
        Xtr, Xte, ytr, yte = train_test_split(d.data, d.target, test_size=0.2, random_state=0,
                                              stratify=None if regression else d.target)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        names = [c.replace(" ", "_") for c in d.feature_names]
        write(os.path.join(out, name, "train.csv"), Xtr, ytr, names, regression)
        write(os.path.join(out, name, "test.csv"), Xte, yte, names, regression)
        model = MLPRegressor if regression else MLPClassifier
        raw = model(random_state=0).fit(Xtr, ytr).score(Xte, yte)
        scaled = make_pipeline(StandardScaler(), model(random_state=0)).fit(Xtr, ytr).score(Xte, yte)
        ours, cfg, best = normlab_score(build, out, name, regression)
        k = 1 if regression else 100
        fmt = "%.3f" if regression else "%.2f"
        rows.append("| %s | %d / %d | %s | %s | %s | batch %d, best epoch %d of at most %d |" % (
            name.replace("_", " "), len(Xtr), len(Xte), fmt % (k * ours), fmt % (k * raw), fmt % (k * scaled),
            cfg["batch_size"], best, cfg["epochs"]))
    print("| data set | train / test rows | normlab, defaults | MLP defaults | StandardScaler + MLP defaults | normlab chose |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nTest accuracy in %; diabetes: R². MLP: scikit-learn's MLPClassifier() / MLPRegressor(), random_state=0.")


if __name__ == "__main__":
    main()
