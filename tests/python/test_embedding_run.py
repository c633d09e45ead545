"""Embedding findings reach a saved run: the tracker's own run (run=) or the Audit's run
(tracker.save / hub.save), read back by the gradscope command as a user would, and from run.db
alone. The planted fault's ground truth is checked here with plain PyTorch: the oscillating
row's consecutive updates point in opposite directions."""
import json
import os
import shutil
import subprocess

import pytest
import torch
from torch import nn

import gradscope


def report_json(cli, run):
    """(exit code, the report's JSON) of `gradscope report RUN --json`."""
    r = subprocess.run([cli, "report", os.fspath(run), "--json"], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def embedding_findings(doc):
    return [(f["type"], f["node"]) for f in doc["findings"] if f["kind"] == "embedding"]


def oscillating_training(tracker, emb, steps, lr):
    """Row 0 is pushed past its minimum at every step (SGD at `lr` on w0^2 moves w0 to
    (1 - 2 lr) w0): at lr 1.0 exactly to -w0, so its update flips sign step after step at the
    same size, a true zombie row; at lr 0.05 it decays smoothly (the healthy control). The other rows get a gradient that moves them smoothly.
    Returns the cosines of row 0's consecutive updates, measured apart from the tracker."""
    torch.manual_seed(0)
    opt = torch.optim.SGD(emb.parameters(), lr=lr)
    updates = []
    for _ in range(steps):
        opt.zero_grad()
        e = emb(torch.arange(emb.num_embeddings))
        (e[0].pow(2).sum() + 0.01 * e[1:].sum()).backward()
        before = emb.weight.detach()[0].clone()
        tracker.step(opt)
        updates.append(emb.weight.detach()[0] - before)
    return [torch.nn.functional.cosine_similarity(a, b, dim=0).item() for a, b in zip(updates, updates[1:])]


def test_tracker_own_run_shows_zombie_rows_in_report(tmp_path, gradscope_cli):
    emb = nn.Embedding(16, 8)
    run = tmp_path / "emb"
    with gradscope.EmbeddingTracker(emb, name="item", run=run) as tracker:
        cosines = oscillating_training(tracker, emb, steps=64, lr=1.0)
    assert max(cosines) < -0.99  # the plant: every update reverses the one before
    assert ("ZOMBIE_ROWS" in [d["type"] for d in tracker.report()["diagnostics"]])
    code, doc = report_json(gradscope_cli, run)
    assert code == 1
    assert ("ZOMBIE_ROWS", "item") in embedding_findings(doc)
    # The run is run.db alone: copied without anything beside it, it says the same.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(run / "run.db", alone / "run.db")
    assert sorted(os.listdir(run)) == ["run.db"]
    assert report_json(gradscope_cli, alone) == (code, doc)


def test_healthy_table_own_run_has_no_embedding_finding(tmp_path, gradscope_cli):
    emb = nn.Embedding(16, 8)
    run = tmp_path / "emb"
    with gradscope.EmbeddingTracker(emb, name="item", run=run) as tracker:
        cosines = oscillating_training(tracker, emb, steps=64, lr=0.05)
    assert min(cosines) > 0.99  # the control: row 0 decays smoothly
    code, doc = report_json(gradscope_cli, run)
    assert embedding_findings(doc) == []
    assert code == 0


def test_save_into_the_audits_run_and_diff_gates_on_it(tmp_path, gradscope_cli):
    def train(run, lr):
        model = nn.Sequential(nn.Embedding(16, 8), nn.Linear(8, 1))
        audit = gradscope.Audit(model, run=run)
        tracker = gradscope.EmbeddingTracker(model[0], name="item")
        torch.manual_seed(0)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        for _ in range(48):
            opt.zero_grad()
            ids = torch.arange(16)
            e = model[0](ids)
            (e[0].pow(2).sum() + 0.01 * model(ids).sum()).backward()
            tracker.before_step()
            audit.step(opt)
            tracker.after_step()
        audit.close()
        tracker.save(run)
        tracker.close()
        return tracker

    healthy, planted = tmp_path / "healthy", tmp_path / "planted"
    train(healthy, 0.05)
    tracker = train(planted, 1.0)
    assert "ZOMBIE_ROWS" in [d["type"] for d in tracker.report()["diagnostics"]]
    _, doc = report_json(gradscope_cli, planted)
    assert ("ZOMBIE_ROWS", "item") in embedding_findings(doc)
    _, doc = report_json(gradscope_cli, healthy)
    assert embedding_findings(doc) == []
    # A CI gate on diff fails when B gains an embedding finding, and says which.
    r = subprocess.run([gradscope_cli, "diff", healthy, planted], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ZOMBIE_ROWS" in r.stdout
    r = subprocess.run([gradscope_cli, "diff", planted, healthy], capture_output=True, text=True)
    assert "ZOMBIE_ROWS" in r.stdout  # gone in B: said, but not a failure
    # ls and html see the finding too.
    r = subprocess.run([gradscope_cli, "ls", tmp_path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    planted_line = [line for line in r.stdout.splitlines() if "planted" in line]
    assert planted_line and "ZOMBIE_ROWS" in planted_line[0], r.stdout


def test_hub_save_writes_every_table(tmp_path, gradscope_cli):
    users, items = nn.Embedding(8, 4), nn.Embedding(16, 8)
    run = tmp_path / "hub"
    audit_model = nn.Sequential(nn.Linear(4, 1))
    audit = gradscope.Audit(audit_model, run=run)
    hub = gradscope.EmbeddingHub()
    hub.track(users, name="user")
    hub.track(items, name="item")
    opt_items = torch.optim.SGD(items.parameters(), lr=1.0)  # item row 0 oscillates (the plant)
    opt_rest = torch.optim.SGD(list(users.parameters()) + list(audit_model.parameters()), lr=0.05)

    def update():
        opt_items.step()
        audit.step(opt_rest)

    for _ in range(48):
        opt_items.zero_grad()
        opt_rest.zero_grad()
        u, i = users(torch.arange(8)), items(torch.arange(16))
        (i[0].pow(2).sum() + 0.01 * i[1:].sum() + audit_model(u).sum()).backward()
        hub.step(update)
    audit.close()
    hub.save(run)
    with pytest.raises(gradscope.Error, match="saved with its hub"):
        hub["item"].save(run)
    hub.close()
    _, doc = report_json(gradscope_cli, run)
    assert ("ZOMBIE_ROWS", "item") in embedding_findings(doc)
    assert ("ZOMBIE_ROWS", "user") not in embedding_findings(doc)


def test_save_refuses_bad_targets(tmp_path):
    emb = nn.Embedding(4, 2)
    tracker = gradscope.EmbeddingTracker(emb, name="item")
    with pytest.raises(gradscope.Error, match="run must be a path"):
        tracker.save(5)
    # A folder without a run: the findings belong to a run, not a loose file.
    with pytest.raises(gradscope.Error, match="run.db': no such file, so nowhere to keep"):
        tracker.save(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(gradscope.Error, match="run_name must be a string"):
        gradscope.EmbeddingTracker(emb, name="x", run=tmp_path / "r", run_name=5)
    # An existing run is not overwritten unless asked.
    gradscope.EmbeddingTracker(emb, name="y", run=tmp_path / "r2").close()
    with pytest.raises(gradscope.Error, match="already exists"):
        gradscope.EmbeddingTracker(emb, name="y", run=tmp_path / "r2")
    gradscope.EmbeddingTracker(emb, name="y", run=tmp_path / "r2", overwrite=True).close()


def test_a_raising_on_step_callback_loses_no_step(tmp_path, gradscope_cli):
    emb = nn.Embedding(8, 4)
    run = tmp_path / "emb"
    seen = []

    def on_step(records):  # called twice a step: the rows' gradient, then their update
        seen.append(records[0].step)
        if len(seen) % 4 == 0:
            raise KeyboardInterrupt("every second step")

    tracker = gradscope.EmbeddingTracker(emb, name="item", run=run, on_step=on_step)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    for _ in range(6):
        opt.zero_grad()
        emb(torch.arange(8)).sum().backward()
        try:
            tracker.step(opt)
        except KeyboardInterrupt:
            pass
    tracker.close()
    assert sorted(set(seen)) == list(range(6))
    saved = gradscope.load_run(run)
    assert saved.steps == 6
