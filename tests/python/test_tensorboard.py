"""Audit(tensorboard=...) writes a TensorBoard event file live through the C++ TensorBoardSink,
read back by the independent reader of the C++ tests (tests/tensorboard/tb_reader.py: Python
protobuf and python3-crc32c, both CRCs of every record checked) and compared with the run."""
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import gradscope
from models import batches, mlp, train

GRADIENT_SITES = ["param_grad", "embedding_rows", "output_grad"]  # the order StepScalars picks


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set (ctest sets it; run the tests through make test)")
    return value


# By path: tests/tensorboard is not a package, and the reader must stay the C++ tests' one.
_spec = importlib.util.spec_from_file_location(
    "tb_reader", os.path.join(_env("GRADSCOPE_SOURCE_DIR"), "tests", "tensorboard", "tb_reader.py"))
tb_reader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb_reader)


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    return tb_reader.proto_module(_env("GRADSCOPE_TB_PROTO"), str(tmp_path_factory.mktemp("pb")))


def scalars(events):
    """(step, tag) -> simple_value; each key once."""
    out = {}
    for e in events:
        for v in e.summary.value if e.HasField("summary") else ():
            if v.WhichOneof("value") == "simple_value":
                assert (e.step, v.tag) not in out, f"{(e.step, v.tag)} written twice"
                out[(e.step, v.tag)] = v.simple_value
    return out


def expected_grad_l2(records):
    """(step, "grad_l2/<node>") -> L2 of the node's gradient, merged over the step's records."""
    sums = {}
    for r in records:
        if r.site in GRADIENT_SITES:
            key = (r.step, r.node, r.site)
            sums[key] = sums.get(key, 0.0) + r.stats.sum_sq
    want = {}
    for (step, node, site), s in sums.items():
        first = next(x for x in GRADIENT_SITES if (step, node, x) in sums)
        if site == first:
            want[(step, f"grad_l2/{node}")] = math.sqrt(s)
    return want


def check_against(events, records, steps, nodes):
    got = scalars(events)
    want = expected_grad_l2(records)
    assert len(want) == steps * len(nodes)
    # simple_value is a float32: equal within float32 rounding of the double.
    bad = [(k, got.get(k), v) for k, v in want.items()
           if k not in got or not math.isclose(got[k], v, rel_tol=2e-7, abs_tol=1e-45)]
    assert not bad, bad[:5]
    assert {k for k in got if k[1].startswith("grad_l2/")} == set(want)
    return got


def test_run_and_tensorboard_get_the_same_steps(pb, tmp_path):
    run_dir, tb_dir = str(tmp_path / "run"), tmp_path / "tb"
    model = mlp()
    with gradscope.Audit(model, run=run_dir, tensorboard=tb_dir) as audit:
        train(model, batches(6), audit)
    events = tb_reader.read_events(tb_reader.event_file(str(tb_dir)), pb)  # asserts both CRCs
    assert events[0].file_version == "brain.Event:2"
    run = gradscope.load_run(run_dir, records=True)
    assert run.steps == 6
    got = check_against(events, run.records, 6, audit.node_ids())
    assert {s for s, _ in got} == set(range(6))
    for node in audit.node_ids():
        assert (5, f"update_ratio/{node}") in got and (5, f"flag/DEAD/{node}") in got
    # The findings text, written when the with-block ends, at the last step.
    texts = [(e.step, v.tensor.string_val[0].decode()) for e in events if e.HasField("summary")
             for v in e.summary.value if v.tag == "gradscope/report"]
    assert len(texts) == 1 and texts[0][0] == 5 and "verdict:" in texts[0][1]


def test_tensorboard_without_a_run(pb, tmp_path):
    model = mlp(seed=3)
    with gradscope.Audit(model, tensorboard=str(tmp_path / "tb"), sample_every=2) as audit:
        train(model, batches(6), audit)
    events = tb_reader.read_events(tb_reader.event_file(str(tmp_path / "tb")), pb)
    got = check_against(events, audit.records(), 3, audit.node_ids())
    assert {s for s, _ in got} == {0, 2, 4}  # the audited steps only
    assert os.listdir(tmp_path) == ["tb"]  # no run store written


def test_unwritable_tensorboard_dir_is_an_error_before_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    run_dir = tmp_path / "run"
    with pytest.raises(gradscope.Error, match="cannot write TensorBoard events to"):
        gradscope.Audit(mlp(), run=run_dir, tensorboard=blocker / "tb")
    assert not run_dir.exists()  # refused before the run store was created: a retry can reuse it


def test_a_refused_run_leaves_no_event_file(tmp_path):
    run_dir, tb_dir = str(tmp_path / "run"), tmp_path / "tb"
    model = mlp()
    with gradscope.Audit(model, run=run_dir) as audit:
        train(model, batches(1), audit)
    with pytest.raises(gradscope.Error):
        gradscope.Audit(model, run=run_dir, tensorboard=tb_dir)  # the run exists, overwrite=False
    assert not tb_dir.exists() or os.listdir(tb_dir) == []


def default_limits():
    """TensorBoard's default bucket limits, built here as TensorFlow's histogram.cc builds them
    (InitDefaultBucketsInner): +-1e-12 * 1.1^k below 1e20, +-DBL_MAX, and 0."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos.append(sys.float_info.max)
    return [-x for x in reversed(pos)] + [0.0] + pos


def bucket_counts(values, limits):
    """{upper limit: count} of the finite `values` (float64) in [limits[i-1], limits[i])."""
    finite = values[np.isfinite(values)]
    index = np.minimum(np.searchsorted(np.asarray(limits), finite, side="right"), len(limits) - 1)
    idx, counts = np.unique(index, return_counts=True)
    return {limits[i]: int(c) for i, c in zip(idx, counts)}


def test_element_histograms_count_the_tensors_elements(pb, tmp_path):
    """histogram_every=2: at audited steps 0, 2, 4 the event file holds, per node, histograms of
    the activation, output gradient and parameter gradients whose buckets are numpy's counts
    of the same tensors in TensorBoard's default buckets."""
    run_dir, tb_dir = str(tmp_path / "run"), tmp_path / "tb"
    model = mlp(seed=5)
    # What the audit taps for each node of the Sequential: the output of its group's last child.
    group_end = {"fc1": "relu1", "fc2": "tanh", "out": "out"}
    seen = {}  # (step, measure, node) -> float64 numpy array
    step = [0]

    def capture(node):
        def hook(module, inputs, output):
            seen[(step[0], "activation", node)] = output.detach().double().numpy().ravel()
            at = step[0]
            output.register_hook(lambda g: seen.__setitem__(
                (at, "output_grad", node), g.detach().double().numpy().ravel()))
        return hook

    for node, child in group_end.items():
        getattr(model, child).register_forward_hook(capture(node))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    with gradscope.Audit(model, run=run_dir, tensorboard=tb_dir, histogram_every=2) as audit:
        for x, y in batches(6):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            for node in group_end:
                grads = [p.grad.detach().double().numpy().ravel() for p in getattr(model, node).parameters()]
                seen[(step[0], "param_grad", node)] = np.concatenate(grads)
            audit.step(opt)
            step[0] += 1
    events = tb_reader.read_events(tb_reader.event_file(str(tb_dir)), pb)
    histos = {}
    for e in events:
        for v in e.summary.value if e.HasField("summary") else ():
            if v.WhichOneof("value") == "histo" and "_elements/" in v.tag:
                assert (e.step, v.tag) not in histos, f"{(e.step, v.tag)} written twice"
                histos[(e.step, v.tag)] = v.histo
    want_keys = {(s, f"{m}_elements/{n}") for s in (0, 2, 4) for m in ("activation", "output_grad", "param_grad")
                 for n in group_end}
    assert set(histos) == want_keys
    limits = default_limits()
    for (s, tag), h in histos.items():
        measure, node = tag.split("_elements/")
        values = seen[(s, measure, node)]
        assert h.num == values.size  # every element finite here
        assert sum(h.bucket) == h.num
        assert h.min == values.min() and h.max == values.max()
        assert math.isclose(h.sum, values.sum(), rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(h.sum_squares, float(values @ values), rel_tol=1e-9)
        got = {limit: int(c) for limit, c in zip(h.bucket_limit, h.bucket) if c > 0}
        assert got == bucket_counts(values, limits), tag
        # Runs of empty buckets collapsed (histogram.cc's EncodeToProto): no two empty in a row.
        assert all(h.bucket[i] > 0 or h.bucket[i + 1] > 0 for i in range(len(h.bucket) - 1)), tag
        assert list(h.bucket_limit) == sorted(h.bucket_limit)
    # The run store keeps the same histograms: exported again, the file has the same buckets.
    out = tmp_path / "export"
    r = subprocess.run([_env("GRADSCOPE_CLI"), "export", run_dir, "--format", "tensorboard", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    exported = {}
    for e in tb_reader.read_events(tb_reader.event_file(str(out)), pb):
        for v in e.summary.value if e.HasField("summary") else ():
            if v.WhichOneof("value") == "histo" and "_elements/" in v.tag:
                exported[(e.step, v.tag)] = v.histo
    assert exported == histos


def test_histogram_every_must_be_a_count(tmp_path):
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(gradscope.Error, match="histogram_every must be an integer >= 0"):
            gradscope.Audit(mlp(), histogram_every=bad)


def test_output_logits_near_float32s_largest_keep_a_finite_mean(pb, tmp_path):
    """Logits of 1e38 once gave log_z and logit_mean Inf: their float32 mean overflowed. The true
    values (1e38 + log 8, and 1e38 - 1e37 / 2 here) are computed in float64 from the logits."""
    model = nn.Linear(4, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    logits = torch.full((3, 5, 8), 1e38)
    logits[:, :, 1] = 9e37  # a row whose float32 sum overflows too
    d = logits.double()
    want = (float(torch.logsumexp(d, -1).mean()), float(d.mean()))
    with gradscope.Audit(model, tensorboard=str(tmp_path / "tb"), attention_every=1) as audit:
        model(torch.randn(2, 4)).sum().backward()
        audit.record_output_logits(logits)
        audit.step(opt)
    got = scalars(tb_reader.read_events(tb_reader.event_file(str(tmp_path / "tb")), pb))
    assert math.isfinite(got[(0, "log_z")]) and math.isfinite(got[(0, "logit_mean")])
    # TensorBoard keeps float32: compared at its precision.
    assert got[(0, "log_z")] == pytest.approx(want[0], rel=1e-6)
    assert got[(0, "logit_mean")] == pytest.approx(want[1], rel=1e-6)


def test_output_logits_give_log_z_and_the_mean_logit_at_attention_steps(pb, tmp_path):
    """record_output_logits: the mean over rows of logsumexp (computed here in float64 from the
    logits themselves) and the mean logit, as TensorBoard tags log_z and logit_mean, at every
    attention_every-th step of training forwards only."""
    torch.manual_seed(0)
    model = nn.Linear(8, 5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    want = {}
    with gradscope.Audit(model, tensorboard=str(tmp_path / "tb"), attention_every=2) as audit:
        for step in range(5):
            x = torch.randn(4, 3, 8)
            logits = model(x) + 7.0 * step  # a drift softmax cannot see
            assert audit.record_output_logits(logits) is logits
            with torch.no_grad():
                audit.record_output_logits(model(x) * 100)  # an evaluation pass: not recorded
            d = logits.detach().double()
            want[step] = (float(torch.logsumexp(d, -1).mean()), float(d.mean()))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch.zeros(12, dtype=torch.long)).backward()
            audit.step(opt)
        with pytest.raises(gradscope.Error, match="must be a tensor"):
            audit.record_output_logits([1.0, 2.0])
        with pytest.raises(gradscope.Error, match="non-empty floating-point tensor"):
            audit.record_output_logits(torch.ones(2, 3, dtype=torch.long, requires_grad=False))
    got = scalars(tb_reader.read_events(tb_reader.event_file(str(tmp_path / "tb")), pb))
    steps = sorted(s for s, tag in got if tag == "log_z")
    assert steps == [0, 2, 4]
    for s in steps:
        assert got[(s, "log_z")] == pytest.approx(want[s][0], abs=1e-4)
        assert got[(s, "logit_mean")] == pytest.approx(want[s][1], abs=1e-4)
