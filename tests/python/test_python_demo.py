"""make demo's PyTorch runs (scripts/python_demo.py) say what the README says they show: the
dying-ReLU MLP is DEAD at fc2; the loss-scaled MLP had its first steps skipped on overflow and
is healthy, in its saved run and in the report the demo writes; the embedding table's planted
rows are ZOMBIE_ROWS in the run its tracker wrote, which is run.db alone; the GPT trio: the
unstable run's attention is named on its first block, the healthy and qk-LayerNorm runs are
healthy, and no block reads SATURATED."""
import json
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
    emb = tmp_path / "demo-python-embedding"
    report = subprocess.run([gradscope_cli, "report", emb, "--json"], capture_output=True, text=True)
    assert report.returncode == 1, report.stderr
    doc = json.loads(report.stdout)
    assert [(f["kind"], f["type"], f["node"]) for f in doc["findings"]] == [("embedding", "ZOMBIE_ROWS", "item")]
    zombie = doc["findings"][0]
    assert [e["value"] for e in zombie["evidence"] if e["name"] == "zombie_rows"] == [16.0]  # every 4th of 64
    assert "ZOMBIE_ROWS" in open(emb / "report.txt").read()
    assert sorted(os.listdir(emb)) == ["report.html", "report.json", "report.txt", "run.db"]
    # Each run's report.txt and report.json are what `gradscope report RUN [--json]` prints.
    gpt = {name: gradscope.load_run(tmp_path / f"demo-python-gpt-{name}").report for name in ("healthy", "unstable", "qknorm")}
    assert gpt["healthy"].healthy(), gpt["healthy"].table()
    assert gpt["qknorm"].healthy(), gpt["qknorm"].table()
    unstable = gpt["unstable"].flags()
    assert {"ATTENTION_LOGIT_GROWTH", "ATTENTION_ENTROPY_COLLAPSE"} <= set(unstable["blocks.0.attn"]), unstable
    assert not any("SATURATED" in f for r in gpt.values() for f in r.flags().values())
    assert "python-gpt-unstable" in out.stdout and "ATTENTION_LOGIT_GROWTH" in out.stdout
    # The LSTM blow-up and its clipped twin, read back from their saved runs.
    blowup = gradscope.load_run(tmp_path / "demo-python-lstm-blowup").report
    clipped = gradscope.load_run(tmp_path / "demo-python-lstm-clipped").report
    assert blowup.series.diverged() and blowup.series.divergence_step <= 5, blowup.table()
    assert blowup.series.leads, blowup.table()
    assert clipped.healthy() and clipped.series.loss_steps == 200, clipped.table()
    assert "python-lstm-blowup" in out.stdout and "DIVERGENCE at step" in out.stdout
    # The blow-up's page draws its clipped twin's loss beside it, with the twin's verdict.
    page = open(tmp_path / "demo-python-lstm-blowup" / "report.html").read()
    assert 'Drawn beside it: <b class="mono">demo-python-lstm-clipped</b>, healthy' in page
    assert '"series":"demo-python-lstm-clipped"' in page and '"series":"demo-python-lstm-blowup"' in page
    for name in ("demo-python-dying-relu", "demo-python-loss-scale", "demo-python-embedding", "demo-python-gpt-unstable",
                 "demo-python-lstm-blowup"):
        run = tmp_path / name
        for flags, file in (([], "report.txt"), (["--json"], "report.json")):
            printed = subprocess.run([gradscope_cli, "report", run, *flags], capture_output=True, text=True)
            assert printed.returncode in (0, 1), printed.stderr
            assert open(run / file).read() == printed.stdout, (name, file)
    # The planted rows flip (cosine -1), the others move smoothly, measured by the demo itself.
    assert "planted rows -1.00" in out.stdout
