"""make demo's PyTorch runs (scripts/python_demo.py) say what the README says they show: the
dying-ReLU MLP is DEAD at fc2; the loss-scaled MLP had its first steps skipped on overflow and
is healthy, in its saved run and in the report the demo writes."""
import os
import subprocess
import sys

import gradscope


def test_the_python_demo_runs_say_what_they_show(tmp_path, digits_csv, gradscope_cli):
    script = os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "scripts", "python_demo.py")
    out = subprocess.run([sys.executable, script, os.path.dirname(digits_csv), str(tmp_path), gradscope_cli],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    dying = gradscope.load_run(tmp_path / "demo-python-dying-relu").report
    assert "DEAD" in dying.node("fc2").flags
    scaled = gradscope.load_run(tmp_path / "demo-python-loss-scale").report
    assert scaled.healthy(), scaled.table()
    ls = scaled.loss_scale
    assert ls is not None and ls.skipped >= 1 and ls.first_skipped == 0 and ls.verdict == "info"
    with open(tmp_path / "demo-python-loss-scale" / "report.txt") as f:
        text = f.read()
    assert "LOSS_SCALE_OVERFLOW informational" in text and "verdict: healthy" in text
