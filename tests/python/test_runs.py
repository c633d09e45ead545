"""Runs written from Python are ordinary runs; load_run reads any run."""
import json
import math
import os
import subprocess

import pytest

import gradscope
from models import batches, mlp, train
from scenarios import NAN_STEP, load_digits, run as run_scenario


@pytest.fixture(scope="module")
def python_run(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("runs") / "exp1")
    model = mlp()
    with gradscope.Audit(model, run=path, run_name="py-exp1") as audit:
        train(model, batches(12), audit)
    return path, audit


def test_load_run_gives_the_audits_report(python_run):
    path, audit = python_run
    run = gradscope.load_run(path, records=True)
    assert run.steps == 12 and run.metadata.name == "py-exp1" and run.metadata.end_time
    assert str(run.report) == str(audit.report())
    assert len(run.records) == len(audit.records())


def test_the_cli_reads_a_python_run(python_run, gradscope_cli, tmp_path):
    path, audit = python_run
    report = subprocess.run([gradscope_cli, "report", path], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert audit.report().table(with_verdict=False) in report.stdout  # the same table, under the header
    assert audit.report().verdict() in report.stdout
    ls = subprocess.run([gradscope_cli, "ls", os.path.dirname(path)], capture_output=True, text=True)
    assert ls.returncode == 0 and ls.stdout.splitlines()[1].split()[:3] == ["exp1", "12", "3"]
    html = tmp_path / "r.html"
    out = subprocess.run([gradscope_cli, "html", path, "-o", str(html)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "fc2" in html.read_text()
    diff = subprocess.run([gradscope_cli, "diff", path, path], capture_output=True, text=True)
    assert diff.returncode in (0, 1), diff.stderr


def test_a_run_that_exists_is_not_overwritten_unless_asked(python_run):
    path, _ = python_run
    with pytest.raises(gradscope.Error, match="exists|already"):
        gradscope.Audit(mlp(), run=path)
    model = mlp()
    with gradscope.Audit(model, run=path, overwrite=True) as audit:
        train(model, batches(2), audit)
    assert gradscope.load_run(path).steps == 2


def test_load_run_errors_name_the_file(tmp_path):
    with pytest.raises(gradscope.Error, match=str(tmp_path / "nope")):
        gradscope.load_run(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.db").write_bytes(b"not a database" * 100)
    with pytest.raises(gradscope.Error, match="run.db"):
        gradscope.load_run(bad)


def _architecture(nodes):
    return [(n.id, n.type, n.order, n.parameters, n.trainable) for n in nodes]


def test_a_run_with_channels_snr_and_leakage_reads_back_as_the_audits_report(tmp_path):
    path = tmp_path / "full"
    model = mlp()
    with gradscope.Audit(model, run=path, gradient_snr=True, channels_all_nodes=gradscope.ChannelView(1, 2),
                         leakage_pairs=[("fc1", "fc2")], leakage_every=2) as audit:
        train(model, batches(9), audit)
    saved, memory = gradscope.load_run(path).report, audit.report()
    # The JSON holds every flag, piece of evidence and value, doubles to the last bit.
    assert saved.to_json() == memory.to_json()
    for a, b in zip(saved.nodes, memory.nodes):
        assert a.node == b.node
        assert not math.isnan(a.grad_snr) and a.grad_snr == b.grad_snr  # computed from state, saved
        assert a.channels > 0 and a.channels == b.channels              # from the channel records
        assert a.effective_rank == b.effective_rank
    run = gradscope.load_run(path)
    assert _architecture(run.architecture) == _architecture(audit.architecture())
    assert run.audit_warnings == audit.warnings()


def test_a_python_nan_run_reads_back_with_its_origin(tmp_path, digits_csv):
    x, y = load_digits(digits_csv)
    audit = run_scenario("nan-later", x, y, NAN_STEP + 3, run_dir=str(tmp_path / "nan"))
    saved, memory = gradscope.load_run(tmp_path / "nan").report, audit.report()
    assert saved.to_json() == memory.to_json()
    origin = json.loads(saved.to_json())["gradscope_report"]["nonfinite_origin"]
    assert origin["node"] == "logfeat" and origin["step"] == NAN_STEP and origin["phase"] == "forward"
