"""The README's "Use it in your training" snippets (marked `<!-- runnable: NAME -->`), each run
as written in a fresh interpreter, in a folder of its own: a snippet that stops working fails."""
import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                      "README.md")


def snippets():
    with open(README) as f:
        return re.findall(r"<!-- runnable: (\w+) -->\n```python\n(.*?)```", f.read(), re.S)


def test_the_readme_has_its_snippets():
    assert [name for name, _ in snippets()] == ["lightning", "transformers", "wandb", "trees"]


@pytest.mark.parametrize("name,code", snippets(), ids=[name for name, _ in snippets()])
def test_a_snippet_runs_as_written(name, code, tmp_path):
    # W&B offline, in the snippet's folder: nothing leaves the machine.
    env = dict(os.environ, WANDB_MODE="offline", WANDB_DIR=str(tmp_path), WANDB_SILENT="true")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, f"README snippet '{name}':\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "verdict: " in done.stdout
