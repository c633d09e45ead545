"""Audit(tensorboard=...) writes a TensorBoard event file live through the C++ TensorBoardSink,
read back by the independent reader of the C++ tests (tests/tensorboard/tb_reader.py: Python
protobuf and python3-crc32c, both CRCs of every record checked) and compared with the run."""
import importlib.util
import math
import os

import pytest

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
