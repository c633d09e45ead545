"""gradscope's TensorBoard event files read by TensorBoard itself (issue 53, item 3): the
`tensorboard` package's EventAccumulator loads every tag and value the project's own reader
(tests/tensorboard/tb_reader.py, which checks both CRCs) finds: scalars, histograms and the
report's text; and `tensorboard --logdir` serves one scalar series back over its HTTP API."""
import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import torch
from torch import nn

import gradscope
from models import batches, mlp
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

_spec = importlib.util.spec_from_file_location(
    "tb_reader", os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "tests", "tensorboard", "tb_reader.py"))
tb_reader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb_reader)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """An audited run with the loss, clipping, output logits and histograms every other step,
    its event file parsed by the project's reader, and TensorBoard's accumulator over it."""
    if not os.environ.get("GRADSCOPE_TB_PROTO"):
        pytest.fail("GRADSCOPE_TB_PROTO is not set (ctest sets it; run the tests through make test)")
    root = tmp_path_factory.mktemp("tb")
    tb_dir = root / "events"
    model = mlp(seed=4)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    with gradscope.Audit(model, tensorboard=str(tb_dir), histogram_every=2, attention_every=1) as audit:
        for x, y in batches(8):
            opt.zero_grad()
            logits = model(x)
            audit.record_output_logits(logits)
            loss = nn.functional.cross_entropy(logits, y)
            loss.backward()
            audit.clip_grad_norm_(0.5)
            audit.step(opt, loss=loss)
    pb = tb_reader.proto_module(os.environ["GRADSCOPE_TB_PROTO"], str(tmp_path_factory.mktemp("pb")))
    events = tb_reader.read_events(tb_reader.event_file(str(tb_dir)), pb)
    accumulator = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    accumulator.Reload()
    return tb_dir, events, accumulator


def values_by_kind(events):
    """The project's reader: {kind: {(step, tag): value}} for simple values, histograms, tensors."""
    out = {"scalars": {}, "histograms": {}, "tensors": {}}
    for e in events:
        for v in e.summary.value if e.HasField("summary") else ():
            kind = {"simple_value": "scalars", "histo": "histograms", "tensor": "tensors"}[v.WhichOneof("value")]
            out[kind][(e.step, v.tag)] = getattr(v, {"scalars": "simple_value", "histograms": "histo",
                                                      "tensors": "tensor"}[kind])
    return out


def test_every_tag_and_value_reads_the_same_in_tensorboard(written):
    _, events, acc = written
    ours = values_by_kind(events)
    tags = acc.Tags()
    assert {t for _, t in ours["scalars"]} == set(tags["scalars"])
    assert {t for _, t in ours["histograms"]} == set(tags["histograms"])
    assert {t for _, t in ours["tensors"]} == set(tags["tensors"])
    for kind in ("loss", "grad_norm", "log_z", "logit_mean", "grad_l2/fc1", "update_ratio/out"):
        assert kind in tags["scalars"], sorted(tags["scalars"])[:20]
    theirs = {(s.step, tag): s.value for tag in tags["scalars"] for s in acc.Scalars(tag)}
    assert theirs.keys() == ours["scalars"].keys()
    assert all(theirs[k] == ours["scalars"][k] or (math.isnan(theirs[k]) and math.isnan(ours["scalars"][k]))
               for k in theirs)
    for tag in tags["histograms"]:
        for h in acc.Histograms(tag):
            mine = ours["histograms"][(h.step, tag)]
            got = h.histogram_value
            assert (got.min, got.max, got.num, got.sum, got.sum_squares) == \
                (mine.min, mine.max, mine.num, mine.sum, mine.sum_squares), tag
            assert list(got.bucket_limit) == list(mine.bucket_limit) and list(got.bucket) == list(mine.bucket), tag
    assert {h.step for h in acc.Histograms(tags["histograms"][0])} == {0, 2, 4, 6}
    report = [e for e in acc.Tensors("gradscope/report")]
    assert len(report) == 1 and b"verdict:" in report[0].tensor_proto.string_val[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tensorboard_serves_a_scalar_series_back(written):
    tb_dir, events, _ = written
    want = sorted((step, value) for (step, tag), value in values_by_kind(events)["scalars"].items() if tag == "loss")
    assert len(want) == 8
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(tb_dir), "--port", str(port),
                               "--host", "127.0.0.1", "--load_fast", "false"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=.&tag=loss"
    try:
        deadline, got, last = time.monotonic() + 120, None, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    got = json.loads(r.read())
                if len(got) == len(want):
                    break
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError) as e:
                last = e
            time.sleep(0.5)
        assert server.poll() is None, server.communicate()[0][-2000:]
        assert got is not None, f"no answer from {url} in 120 s: {last}"
        # [wall_time, step, value] per point, the value as the event file's float32.
        assert [(step, value) for _, step, value in got] == want
    finally:
        server.terminate()
        server.wait(timeout=30)
