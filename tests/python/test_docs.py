"""The examples of docs/python.md marked <!-- runnable --> run as they are, and print what their
comments say where a comment states a value."""
import contextlib
import io
import os
import re

import pytest


def examples():
    path = os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "docs", "python.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"<!-- runnable -->\n```python\n(.*?)```", text, re.S)


def test_there_are_runnable_examples():
    assert len(examples()) >= 9


@pytest.mark.parametrize("index", range(len(examples())))
def test_runnable_example_runs(index, tmp_path, monkeypatch):
    code = examples()[index]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # in this process: torch is imported once
        exec(compile(code, f"docs/python.md example {index}", "exec"), {"__name__": "__main__"})
    # Values the comments promise: "print(x)   # 320" -> a printed line starts with 320 ("..."
    # stands for any text; a closing " (remark)" is prose).
    printed = out.getvalue().splitlines()
    promised = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+# (.+)$", code, re.M)]
    for want in promised:
        want = re.sub(r"\s+\([^()]*\)$", "", want)
        if re.fullmatch(r"[-\[\(\d'.].*", want):
            pattern = re.escape(want).replace(re.escape("..."), ".*")
            assert any(re.match(pattern, line) for line in printed), (want, printed)
