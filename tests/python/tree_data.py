"""scikit-learn's bundled tables (scripts/fetch-data.sh puts them in data/) for the boosted-tree
tests: rows, labels, and the demo's reproducible split."""
import os

import numpy as np
import pytest


def sklearn_table(name):
    """(x, y) of data/<name>.csv: the label in the last column, after a first line of counts or
    names when the file has one (read_sklearn_csv's rule: fewer fields than a row, or words)."""
    folder = os.environ.get("GRADSCOPE_DATA_DIR") or os.environ.get("GRADSCOPE_DEFAULT_DATA_DIR", "data")
    path = os.path.join(folder, name + ".csv")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run scripts/fetch-data.sh (make test does)")
    with open(path, encoding="utf-8") as f:
        first, second = f.readline().split(","), f.readline().split(",")
    try:
        [float(v) for v in first]
        header = len(first) < len(second)
    except ValueError:
        header = True
    table = np.loadtxt(path, delimiter=",", skiprows=1 if header else 0)
    return np.ascontiguousarray(table[:, :-1]), table[:, -1].copy()


def split(x, y, valid_fraction, seed=7):
    """(x_train, y_train, x_valid, y_valid): the rows shuffled with `seed`, the last
    `valid_fraction` of them to validate on."""
    order = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) - int(round(valid_fraction * len(x)))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]
