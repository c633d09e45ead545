"""Bad input: each gets an error that names the object and says what to do."""
import pytest
import torch
from torch import nn

import gradscope
from models import batches, hooks_left, mlp


def test_a_model_without_parameters():
    with pytest.raises(gradscope.Error, match="model of type Sequential has no parameters; nothing to audit"):
        gradscope.Audit(nn.Sequential(nn.ReLU(), nn.Tanh()))


def test_not_a_module():
    with pytest.raises(TypeError, match="must be a torch.nn.Module, got function"):
        gradscope.Audit(lambda x: x)


def test_bad_options():
    with pytest.raises(gradscope.Error, match="sample_every must be an integer >= 1, got 0"):
        gradscope.Audit(mlp(), sample_every=0)
    with pytest.raises(gradscope.Error, match="no module 'fc9' in the model"):
        gradscope.Audit(mlp(), nodes=["fc9"])
    with pytest.raises(gradscope.Error, match="node 'relu1' \\(ReLU\\) has no parameters"):
        gradscope.Audit(mlp(), nodes=["fc1", "relu1"])


def test_parameters_without_data_are_a_clear_error():
    # Parameters on any device with data are measured there (the ATen path, docs/devices.md);
    # the meta device has shapes only, so a model on it is refused before any hook goes on.
    # Debian's torch has no CUDA: the device path itself is tested in C++ by forcing it on CPU
    # tensors (tests/torch/aten_stats_test.cpp).
    assert not torch.cuda.is_available()
    model = nn.Sequential(nn.Linear(4, 4, device="meta"))
    with pytest.raises(gradscope.Error, match="parameter 'weight' is on device meta, which holds no data to measure"):
        gradscope.Audit(model)
    assert hooks_left(model) == []
    with pytest.raises((AssertionError, RuntimeError), match="CUDA"):
        mlp().cuda()


def test_a_tensor_without_data_in_the_forward_is_a_clear_error():
    model = mlp()
    with gradscope.Audit(model, free_nodes=["x"]) as audit:
        with pytest.raises(gradscope.Error, match="tensor 'x': on device meta, which holds no data to measure"):
            audit.tap("x", torch.zeros(3, device="meta"))


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return {"y": self.fc(x)}


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return y, y * 100


def test_a_non_tensor_output_names_the_node_and_the_type():
    model = nn.Sequential()
    model.add_module("block", DictOut())
    with pytest.raises(gradscope.Error, match="node 'block' \\(DictOut\\) returned dict, not a tensor"):
        with gradscope.Audit(model):
            model(torch.randn(2, 4))
    assert hooks_left(model) == []


def test_a_tuple_output_is_measured_by_its_first_tensor():
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("block", TupleOut())
    x = torch.randn(2, 4)
    with gradscope.Audit(model) as audit:
        y, _ = model(x)
        audit.step(lambda: None)
    # the node's own activation (its auto-scoped submodule "block/fc" has its own records)
    act = [r.stats for r in audit.records() if r.site == "activation" and r.node == "block"]
    assert len(act) == 1 and act[0].count == 8
    assert act[0].max == y.max().item()  # not y * 100


def test_an_integer_output_names_the_node_and_dtype():
    class Argmax(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).argmax(1)

    model = nn.Sequential()
    model.add_module("pick", Argmax())
    with gradscope.Audit(model):
        with pytest.raises(gradscope.Error, match="'pick'.*int64|int64.*'pick'|pick.*Long|pick.*long"):
            model(torch.randn(2, 4))


def test_an_embedding_tracker_on_another_module():
    with pytest.raises(gradscope.Error, match="embedding 'item': module of type Linear is not an nn.Embedding"):
        gradscope.EmbeddingTracker(nn.Linear(2, 2), name="item")


def test_an_unknown_tap_id_suggests_the_nearest():
    model = mlp()
    with gradscope.Audit(model) as audit:
        with pytest.raises(gradscope.Error, match="unknown node id 'fc3'; nearest: 'fc1'"):
            audit.tap("fc3", torch.ones(2))
        assert batches(1)


def test_a_run_named_with_the_wrong_types_is_a_clear_error(tmp_path):
    model = nn.Sequential(nn.Linear(4, 2))
    with pytest.raises(gradscope.Error, match="audit: run_name must be a string, got int"):
        gradscope.Audit(model, run=tmp_path / "r", run_name=5)
    with pytest.raises(gradscope.Error, match=r"audit: run must be a path \(str or os.PathLike\), got int"):
        gradscope.Audit(model, run=5)
    with pytest.raises(gradscope.Error, match="audit: overwrite must be True or False, got 'yes'"):
        gradscope.Audit(model, run=tmp_path / "r", overwrite="yes")
    assert not (tmp_path / "r").exists()  # nothing made before the check
