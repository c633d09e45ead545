"""The packed model file checked by the safetensors package itself (issue 53, item 5): what
gradscope.compress.save and save_weights write loads with safetensors.torch.load_file and
safe_open, every tensor's name, dtype, shape and bytes equal to what gradscope's reader reads;
and over the packed_file fuzz seeds, every file the reference implementation refuses gradscope
refuses too (gradscope refuses more: its manifest and the tensors must agree)."""
import json
import os

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

import gradscope
from gradscope import _engine
from test_compress import BATCH, edited, trained, with_norm

# safetensors' dtype names (its specification) as torch's.
DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


def reference(path):
    """Every tensor as safetensors reads it, and the header's metadata."""
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def as_bytes(tensor):
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def expect_same(path, theirs):
    ours = _engine.read_packed_tensors(str(path))
    assert sorted(name for name, _, _, _ in ours) == sorted(theirs)
    for name, dtype, shape, data in ours:
        t = theirs[name]
        assert DTYPES[dtype] == t.dtype, name
        assert list(shape) == list(t.shape), name
        assert data == as_bytes(t), name


def test_what_gradscope_writes_reads_the_same_in_safetensors(tmp_path):
    net, audit = trained()
    base = gradscope.compress.recipe(gradscope.compress.profile(net, audit, batch=BATCH), budget_bytes=3000)
    recipe = edited(base, fc1={"precision": "int4", "pruned_units": [3, 30]},
                    fc2={"precision": "int8", "pruned_units": []}, out={"precision": "fp16", "pruned_units": []})
    packed, weights = tmp_path / "m.gsq.safetensors", tmp_path / "w.safetensors"
    gradscope.compress.save(with_norm(1), recipe, packed)
    gradscope.compress.save_weights(with_norm(2), weights)
    for path in (packed, weights):
        theirs, metadata = reference(path)
        assert theirs.keys() == load_file(str(path)).keys()
        expect_same(path, theirs)
        # gradscope's manifest in the header's __metadata__: the recipe's nodes, or none.
        nodes = json.loads(metadata["gradscope_manifest"])["gradscope_packed"]["nodes"]
        assert [n["node"] for n in nodes] == (["fc1", "fc2", "out"] if path == packed else [])
    theirs, _ = reference(packed)
    assert theirs["fc1.weight.codes"].dtype == torch.uint8 and theirs["fc1.weight.scales"].shape == (30,)
    assert theirs["out.weight"].dtype == torch.float16
    # save_weights keeps every entry as it is: the state dict, bit for bit.
    theirs, _ = reference(weights)
    for name, value in with_norm(2).state_dict().items():
        assert torch.equal(theirs[name], value), name


def test_every_seed_the_reference_refuses_gradscope_refuses_too():
    seeds = os.environ.get("GRADSCOPE_PACKED_SEEDS")
    if not seeds or not os.path.isdir(seeds):
        pytest.fail(f"GRADSCOPE_PACKED_SEEDS={seeds!r} is not the packed_file seeds' folder: run through ctest, "
                    "whose fixture fuzz.seeds writes them (make test)")
    files = sorted(os.path.join(seeds, name) for name in os.listdir(seeds))
    assert len(files) >= 40
    refused_by_both, read_by_both = [], []
    for path in files:
        try:
            theirs, _ = reference(path)
        except Exception:  # safetensors raises its own errors (SafetensorError) and others
            theirs = None
        try:
            _engine.read_packed_tensors(path)
            ours = True
        except gradscope.Error:
            ours = False
        if theirs is None:
            assert not ours, f"{os.path.basename(path)}: safetensors refuses it, gradscope reads it"
            refused_by_both.append(path)
        elif ours:
            expect_same(path, theirs)
            read_by_both.append(path)
    # Both kinds are there, so the test can fail either way.
    assert len(refused_by_both) >= 3 and len(read_by_both) >= 10, (len(refused_by_both), len(read_by_both))
