"""Runs written from Python are ordinary runs; load_run reads any run."""
import os
import subprocess

import pytest

import gradscope
from models import batches, mlp, train


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
