"""gradscope.compress: the C++ recipe rule and compress::apply on a PyTorch model. Python's
apply equals the C++ apply bit for bit on the same weights and recipe, with the same size; a
recipe is the JSON `gradscope compress` writes; a recipe for another model is refused before
any change."""
import collections
import copy
import json
import subprocess

import pytest
import torch
from torch import nn

import gradscope
from conftest import run_json

BATCH = 8


def mlp():
    """The C++ reference's parity MLP (cpp_reference.cpp: parity_mlp)."""
    return nn.Sequential(collections.OrderedDict([
        ("fc1", nn.Linear(16, 32)), ("tanh", nn.Tanh()), ("fc2", nn.Linear(32, 32)), ("relu", nn.ReLU()),
        ("out", nn.Linear(32, 4))]))


def trained(run=None, steps=12):
    torch.manual_seed(5)
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with gradscope.Audit(net, run=run, channels_all_nodes=gradscope.ChannelView(every=1), keep_steps=0) as audit:
        for _ in range(steps):
            x, y = torch.randn(BATCH, 16) * 3, torch.randn(BATCH, 4)
            opt.zero_grad()
            (net(x) - y).pow(2).mean().backward()
            audit.step(opt)
    return net, audit


def edited(recipe, **by_node):
    """The recipe with some nodes' precision / pruned units replaced, through its JSON."""
    doc = json.loads(recipe.to_json())
    for node in doc["gradscope_compression_recipe"]["nodes"]:
        node.update(by_node.get(node["node"], {}))
    return gradscope.compress.Recipe.from_json(json.dumps(doc), "edited")


def raw(net):
    return b"".join(p.detach().numpy().tobytes() for p in net.parameters())


def test_apply_equals_the_cpp_apply_bit_for_bit(cpp_reference, tmp_path):
    net, audit = trained()
    profile = gradscope.compress.profile(net, audit, batch=BATCH)
    assert [(p.node, p.weight_shape, p.next, p.next_fan) for p in profile] == [
        ("fc1", [32, 16], "fc2", 1), ("fc2", [32, 32], "out", 1), ("out", [4, 32], "", 0)]
    base = gradscope.compress.recipe(profile, budget_bytes=3000)
    assert base.bytes <= 3000 and base.fp32_bytes == 4 * (32 * 16 + 32 + 32 * 32 + 32 + 4 * 32 + 4)
    # Every path of apply: INT4, INT8 and FP16, units pruned with the next node's inputs, and an
    # all-zero unit (stays zero); a planted exact tie (2.5 steps) rounds as at::round does.
    recipe = edited(base, fc1={"precision": "int4", "pruned_units": [3, 30]},
                    fc2={"precision": "int8", "pruned_units": [0]}, out={"precision": "fp16", "pruned_units": []})
    with torch.no_grad():
        net.fc1.weight[5].zero_()
        net.fc2.weight[7, :3] = torch.tensor([127.0, 2.5, -2.5])
    recipe_path, before, after = tmp_path / "recipe.json", tmp_path / "in.bin", tmp_path / "out.bin"
    recipe_path.write_text(recipe.to_json())
    before.write_bytes(raw(net))
    cpp = run_json([cpp_reference, "apply", str(recipe_path), str(before), str(after)])[0]

    size = gradscope.compress.apply(net, recipe)
    assert raw(net) == after.read_bytes()
    assert size == cpp["bytes"] and cpp["fp32_bytes"] == base.fp32_bytes
    # What was applied, checked on the values too: pruned units and the inputs they fed are 0.
    assert net.fc1.weight[[3, 30]].abs().sum() == 0 and net.fc1.bias[[3, 30]].abs().sum() == 0
    assert net.fc2.weight[:, [3, 30]].abs().sum() == 0 and net.out.weight[:, 0].abs().sum() == 0
    assert net.fc1.weight[5].abs().sum() == 0
    assert all(len(torch.unique(row)) <= 15 for row in net.fc1.weight)   # INT4: levels -7..7
    assert torch.equal(net.out.weight, net.out.weight.half().float())


def test_size_is_the_recipe_size_and_a_second_apply_changes_nothing(cpp_reference):
    net, audit = trained()
    recipe = gradscope.compress.recipe(gradscope.compress.profile(net, audit, batch=BATCH), budget_bytes=2500)
    assert any(d.precision != "fp32" for d in recipe.nodes)
    applied = gradscope.compress.apply_detailed(net, recipe)
    assert applied.bytes == recipe.bytes == sum(n.bytes for n in applied.nodes)
    assert [(n.node, n.precision) for n in applied.nodes] == [(d.node, d.precision) for d in recipe.nodes]
    once = raw(net)
    assert gradscope.compress.apply(net, recipe) == recipe.bytes and raw(net) == once  # on its own grid


def test_a_recipe_for_another_model_names_the_node_and_changes_nothing():
    net, audit = trained(steps=3)
    recipe = gradscope.compress.recipe(gradscope.compress.profile(net, audit, batch=BATCH), budget_bytes=3000)
    other = nn.Sequential(collections.OrderedDict([("fc1", nn.Linear(16, 32)), ("head", nn.Linear(32, 4))]))
    kept = raw(other)
    with pytest.raises(gradscope.Error, match=r"node\(s\) 'fc2', 'out' not in the model \(its nodes: fc1, head\)"):
        gradscope.compress.apply(other, recipe)
    assert raw(other) == kept
    wider = mlp()
    wider.fc2 = nn.Linear(32, 48)
    with pytest.raises(gradscope.Error, match=r"shapes differ for 'fc2' \(recipe weight \[32, 32\]"):
        gradscope.compress.apply(wider, recipe)


def test_recipe_from_a_python_run_equals_the_cli_recipe(gradscope_cli, tmp_path):
    run = tmp_path / "run"
    net, audit = trained(run=run, steps=6)
    gradscope.compress.save_profile(run, gradscope.compress.profile(net, audit, batch=BATCH))
    out = tmp_path / "cli.json"
    subprocess.run([gradscope_cli, "compress", str(run), "--budget-bytes", "2500", "-o", str(out)], check=True,
                   capture_output=True)
    mine = gradscope.compress.recipe(run, budget_bytes=2500)
    assert out.read_text() == mine.to_json()
    loaded = gradscope.compress.Recipe.load(out)
    assert loaded.to_json() == mine.to_json() and loaded.bytes == mine.bytes <= 2500
    model = copy.deepcopy(net)
    assert gradscope.compress.apply(model, out) == mine.bytes   # a path works as the recipe too
    # From the saved run to a packed file by the CLI (no LibTorch), loaded into PyTorch: the
    # model the recipe applied in memory, bit for bit.
    weights, packed = tmp_path / "w.safetensors", tmp_path / "p.safetensors"
    gradscope.compress.save_weights(net, weights)
    subprocess.run([gradscope_cli, "compress", str(run), "--budget-bytes", "2500", "--weights", str(weights),
                    "--packed", str(packed), "-o", str(tmp_path / "again.json")], check=True, capture_output=True)
    fresh = mlp()
    gradscope.compress.load(fresh, packed)
    assert raw(fresh) == raw(model)
    assert packed.stat().st_size < weights.stat().st_size


def test_bad_input_is_an_error_naming_it(tmp_path):
    net, audit = trained(steps=2)
    profile = gradscope.compress.profile(net, audit, batch=BATCH)
    with pytest.raises(gradscope.Error, match="give budget_bytes or max_loss, not both or neither"):
        gradscope.compress.recipe(profile)
    with pytest.raises(gradscope.Error, match="give budget_bytes or max_loss, not both or neither"):
        gradscope.compress.recipe(profile, budget_bytes=100, max_loss=0.1)
    with pytest.raises(gradscope.Error, match="smallest"):
        gradscope.compress.recipe(profile, budget_bytes=10)
    with pytest.raises(gradscope.Error, match="no units.json"):
        gradscope.compress.recipe(tmp_path, budget_bytes=1000)
    with pytest.raises(gradscope.Error, match="batch 0 is < 1"):
        gradscope.compress.profile(net, audit, batch=0)
    with pytest.raises(gradscope.Error, match=r"edited: .*precision"):
        edited(gradscope.compress.recipe(profile, budget_bytes=3000), fc1={"precision": "int5"})
    with pytest.raises(TypeError, match="must be a gradscope.compress.Recipe or a path"):
        gradscope.compress.apply(net, {"nodes": []})
    bad = edited(gradscope.compress.recipe(profile, budget_bytes=3000), fc1={"precision": "int8"})
    with torch.no_grad():
        net.fc1.weight[0, 0] = float("nan")
    with pytest.raises(gradscope.Error, match="recipe node 'fc1': weight holds NaN or Inf"):
        gradscope.compress.apply(net, bad)


def with_norm(seed):
    """mlp() with a BatchNorm between fc1 and its activation, its buffers moved off their start."""
    torch.manual_seed(seed)
    net = nn.Sequential(collections.OrderedDict([
        ("fc1", nn.Linear(16, 32)), ("bn", nn.BatchNorm1d(32)), ("tanh", nn.Tanh()), ("fc2", nn.Linear(32, 32)),
        ("relu", nn.ReLU()), ("out", nn.Linear(32, 4))]))
    net.train()
    for _ in range(3):
        net(torch.randn(BATCH, 16))
    return net.eval()


def test_saved_and_loaded_equals_applied_bit_for_bit(tmp_path):
    net, audit = trained()
    base = gradscope.compress.recipe(gradscope.compress.profile(net, audit, batch=BATCH), budget_bytes=3000)
    for fc1, fc2, out in [("int3", "int2", "fp16"), ("int4", "int8", "fp32")]:
        recipe = edited(base, fc1={"precision": fc1, "pruned_units": [3, 30]}, fc2={"precision": fc2, "pruned_units": []},
                        out={"precision": out, "pruned_units": []})
        model, applied, fresh = with_norm(1), with_norm(1), with_norm(2)
        path = tmp_path / f"{fc1}.safetensors"
        size = gradscope.compress.save(model, recipe, path)
        assert raw(model) == raw(with_norm(1))  # save() leaves the model as it was
        nbytes = gradscope.compress.apply(applied, recipe)
        gradscope.compress.load(fresh, path)
        for (name, a), (_, b) in zip(applied.state_dict().items(), fresh.state_dict().items()):
            assert torch.equal(a, b), name
        x = torch.randn(5, 16)
        with torch.no_grad():
            assert torch.equal(applied(x), fresh(x))
        # On disk: the applied bytes, BatchNorm's five buffers and parameters as they are, the header.
        norm = sum(t.numel() * t.element_size() for name, t in model.state_dict().items() if name.startswith("bn."))
        assert size.data_bytes == nbytes + norm
        assert path.stat().st_size == size.file_bytes == size.header_bytes + size.data_bytes
        assert size.file_bytes < sum(t.numel() * t.element_size() for t in model.state_dict().values())


def test_a_file_saved_in_cpp_loads_in_python_and_weights_round_trip(tmp_path):
    net = with_norm(3)
    path = tmp_path / "w.safetensors"
    size = gradscope.compress.save_weights(net, path)
    assert size.data_bytes == sum(t.numel() * t.element_size() for t in net.state_dict().values())
    other = with_norm(4)
    gradscope.compress.load(other, path)
    for (name, a), (_, b) in zip(net.state_dict().items(), other.state_dict().items()):
        assert torch.equal(a, b), name
    # The file's layout as safetensors specifies it: a little-endian length, JSON, the data.
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert header["__metadata__"]["format"] == "gradscope-packed"
    lo, hi = header["fc1.weight"]["data_offsets"]
    assert data[8 + n + lo:8 + n + hi] == net.fc1.weight.detach().numpy().tobytes()


def test_loading_into_another_model_is_refused_before_any_change(tmp_path):
    path = tmp_path / "m.safetensors"
    gradscope.compress.save_weights(with_norm(1), path)
    other = mlp()
    kept = raw(other)
    with pytest.raises(gradscope.Error, match=r"does not fit this model: 'bn.weight'.* not in the model"):
        gradscope.compress.load(other, path)
    assert raw(other) == kept
    with pytest.raises(gradscope.Error, match="no such file"):
        gradscope.compress.load(other, tmp_path / "none")
    with pytest.raises(TypeError, match="must be a torch.nn.Module"):
        gradscope.compress.save_weights("model", path)


def safetensors_file(path, tensors):
    """A safetensors file of `tensors` (name -> tensor), written by hand from its public layout."""
    names = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I64"}
    header, data = {}, b""
    for name, t in tensors.items():
        raw_bytes = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw_bytes)]}
        data += raw_bytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)


def test_an_integer_entry_under_a_float_parameters_name_is_refused(tmp_path):
    # load_state_dict converts an I32 tensor into the float parameter without a word.
    net = mlp()
    state = dict(net.state_dict())
    state["fc1.bias"] = (state["fc1.bias"] * 100).to(torch.int32)
    safetensors_file(tmp_path / "i32.safetensors", state)
    kept = raw(net)
    with pytest.raises(gradscope.Error, match=r"dtypes cannot load for 'fc1.bias' \(file I32, model F32\)"):
        gradscope.compress.load(net, tmp_path / "i32.safetensors")
    assert raw(net) == kept


def test_calibrated_rounding_loads_as_applied_in_the_same_bytes(tmp_path):
    net, audit = trained()
    recipe = edited(gradscope.compress.recipe(gradscope.compress.profile(net, audit, batch=BATCH), budget_bytes=3000),
                    fc1={"precision": "int3", "pruned_units": [4]}, fc2={"precision": "int4", "pruned_units": []},
                    out={"precision": "int8", "pruned_units": []})
    torch.manual_seed(8)
    calibration = torch.randn(256, 16) * 3
    grams = gradscope.compress.calibration_grams(net, recipe, calibration)
    assert sorted(grams) == ["fc1", "fc2", "out"] and grams["fc2"].shape == (32, 32)
    assert torch.allclose(grams["fc1"], calibration.double().t() @ calibration.double())
    applied, nearest, loaded = copy.deepcopy(net), copy.deepcopy(net), mlp()
    size = gradscope.compress.apply(applied, recipe, calibration=calibration)
    assert size == gradscope.compress.apply(nearest, recipe) == recipe.bytes
    gradscope.compress.save(net, recipe, tmp_path / "m.safetensors", calibration=calibration)
    gradscope.compress.load(loaded, tmp_path / "m.safetensors")
    assert raw(applied) == raw(loaded) and raw(applied) != raw(nearest)
    # fc1 sees the calibration batch itself: GPTQ moved its output less than rounding to nearest.
    with torch.no_grad():
        def moved(m):
            return (net.fc1(calibration) - m.fc1(calibration)).pow(2).sum().item()
        assert moved(applied) < moved(nearest)
    class Early(nn.Module):  # never runs `out`
        def __init__(self, m):
            super().__init__()
            self.fc1, self.fc2, self.out = m.fc1, m.fc2, m.out

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x)))

    with pytest.raises(gradscope.Error, match="never reached 'out'"):
        gradscope.compress.calibration_grams(Early(net), recipe, torch.randn(4, 16))
    with pytest.raises(gradscope.Error, match="recipe node 'fc1' is not a module of the model"):
        gradscope.compress.calibration_grams(net.fc1, recipe, torch.randn(4, 16))


def test_calibrated_rounding_of_a_conv_node(tmp_path):
    torch.manual_seed(2)
    net = nn.Sequential(collections.OrderedDict([
        ("conv", nn.Conv2d(3, 8, 3, padding=1)), ("relu", nn.ReLU()), ("flat", nn.Flatten()),
        ("out", nn.Linear(8 * 6 * 6, 5))]))
    doc = {"gradscope_compression_recipe": {
        "version": 1, "method": "hand", "budget_bytes": 0, "max_loss": None, "bytes": 0, "fp32_bytes": 0,
        "predicted_loss": 0, "magnitude_keep": 1.0, "nodes": [
            {"node": "conv", "weight_shape": [8, 3, 3, 3], "bias": 8, "next": "", "next_fan": 0, "precision": "int2",
             "pruned_units": [], "bytes": 0, "predicted_loss": 0, "premise": "", "action": "", "expected_effect": ""},
            {"node": "out", "weight_shape": [5, 288], "bias": 5, "next": "", "next_fan": 0, "precision": "int4",
             "pruned_units": [], "bytes": 0, "predicted_loss": 0, "premise": "", "action": "", "expected_effect": ""}]}}
    recipe = gradscope.compress.Recipe.from_json(json.dumps(doc), "hand")
    batch = torch.randn(64, 3, 6, 6)
    grams = gradscope.compress.calibration_grams(net, recipe, batch)
    patches = torch.nn.functional.unfold(batch, 3, padding=1).transpose(1, 2).reshape(-1, 27).double()
    assert torch.allclose(grams["conv"], patches.t() @ patches)
    applied, nearest = copy.deepcopy(net), copy.deepcopy(net)
    gradscope.compress.apply(applied, recipe, calibration=batch)
    gradscope.compress.apply(nearest, recipe)
    with torch.no_grad():
        def moved(m):
            return (net.conv(batch) - m.conv(batch)).pow(2).sum().item()
        assert moved(applied) < moved(nearest)
