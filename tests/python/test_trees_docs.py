"""The Python examples of docs/trees.md marked <!-- runnable --> run as they are, from a folder
holding data/breast_cancer.csv, and print the verdict their comment states."""
import contextlib
import io
import os
import re

import pytest


def examples():
    path = os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "docs", "trees.md")
    with open(path, encoding="utf-8") as f:
        return re.findall(r"<!-- runnable -->\n```python\n(.*?)```", f.read(), re.S)


def test_one_example_per_package():
    assert [re.search(r"import numpy as np, (\w+)", e).group(1) for e in examples()] == \
        ["xgboost", "lightgbm", "catboost"]


@pytest.mark.parametrize("index", range(len(examples())))
def test_example_prints_its_verdict(index, tmp_path, monkeypatch):
    code = examples()[index]
    data = os.environ.get("GRADSCOPE_DATA_DIR") or os.environ.get("GRADSCOPE_DEFAULT_DATA_DIR", "data")
    os.symlink(os.path.abspath(data), tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"docs/trees.md example {index}", "exec"), {"__name__": "__main__"})
    promised = re.search(r"# (verdict: .*)$", code.strip().splitlines()[-1]).group(1)
    assert out.getvalue().strip().splitlines()[-1] == promised
