"""gradscope.compress: compression recipes from training dynamics (docs/compression.md), made
and applied by the C++ engine on a PyTorch model's own parameters.

    with gradscope.Audit(model, run="runs/exp1", channels_all_nodes=gradscope.ChannelView(every=1),
                         keep_steps=0) as audit:
        ...                                                  # train
    profile = gradscope.compress.profile(model, audit, batch=64)
    gradscope.compress.save_profile("runs/exp1", profile)    # units.json: `gradscope compress` reads it
    recipe = gradscope.compress.recipe("runs/exp1", budget_bytes=8000)   # or recipe(profile, ...)
    size = gradscope.compress.apply(model, recipe)           # in place; bytes as stored
    gradscope.compress.save(model, recipe, "model.gsq.safetensors")   # packed, on disk
    gradscope.compress.load(fresh_model, "model.gsq.safetensors")     # runs as the applied model

A recipe is the JSON `gradscope compress` writes: Recipe.load(path), recipe.to_json(),
Recipe.from_json(text).
"""
import os

import torch
from torch import nn

from . import _engine
from ._engine import Applied, Error, NodeDecision, NodeProfile, PackedFileSize, Recipe

__all__ = ["Applied", "NodeDecision", "NodeProfile", "PackedFileSize", "Recipe", "apply", "apply_detailed",
           "calibration_grams", "load", "profile", "recipe", "save", "save_profile", "save_weights"]


def _require_module(model):
    if not isinstance(model, nn.Module):
        raise TypeError(f"compress: model must be a torch.nn.Module, got {type(model).__name__}")


def _model_spec(model):
    """The whole model as the engine's node spec: every module path and parameter (shared)."""
    _require_module(model)
    modules = [(path, type(m).__name__) for path, m in model.named_modules() if path]
    return ("model", type(model).__name__, modules, list(model.named_parameters()))


def profile(model, audit, batch, chain=True):
    """The rule's input from a trained `model` and its `audit` (a gradscope.Audit of it, open or
    closed): every audited node with a weight of 2+ dimensions, its final per-unit weight
    statistics, its channel view (give the audit `channels_all_nodes=`) and its gradients over
    the steps the audit kept (`keep_steps=0`: all). `batch`: samples per training step.
    `chain`: each node feeds the next, so its units may be pruned with the next one's inputs."""
    from ._audit import Audit
    if not isinstance(audit, Audit):
        raise TypeError(f"compress: audit must be a gradscope.Audit, got {type(audit).__name__}")
    return _engine.profile_model(_model_spec(model), audit._engine, batch, chain)


def save_profile(run, profile):
    """Writes `profile` as units.json into the run directory `run`, for `gradscope compress RUN`."""
    _engine.save_compress_profile(os.fspath(run), list(profile))


def recipe(source, budget_bytes=None, max_loss=None, *, use_fisher=True, use_unit_saliency=True):
    """The recipe within a size (`budget_bytes`) or a predicted loss increase (`max_loss`, nats):
    give one. `source`: a run directory with units.json (what `gradscope compress RUN` reads) or
    a profile (a list of NodeProfile from profile()). `use_fisher`, `use_unit_saliency`: the
    rule's ablations (RuleOptions)."""
    if (budget_bytes is None) == (max_loss is None):
        raise Error("compress: give budget_bytes or max_loss, not both or neither")
    if isinstance(source, (str, os.PathLike)):
        profiles = _engine.load_run_compress_profile(os.fspath(source))
    elif isinstance(source, (list, tuple)) and all(isinstance(p, NodeProfile) for p in source):
        profiles = list(source)
    else:
        raise TypeError(f"compress: source must be a run directory or a list of NodeProfile, got "
                        f"{type(source).__name__}")
    return _engine.make_recipe(profiles, 0 if budget_bytes is None else int(budget_bytes),
                               float("nan") if max_loss is None else float(max_loss), use_fisher,
                               use_unit_saliency)


def _recipe_of(r):
    if isinstance(r, Recipe):
        return r
    if isinstance(r, (str, os.PathLike)):
        return Recipe.load(os.fspath(r))
    raise TypeError(f"compress: recipe must be a gradscope.compress.Recipe or a path, got {type(r).__name__}")


def calibration_grams(model, recipe, batch):
    """Per recipe node, X^T X (float64) of its inputs when `model` runs on `batch` (a tensor, or
    a tuple of the model's arguments): what error-minimising rounding (GPTQ,
    docs/compression.md) needs. A Linear's inputs are its rows; a Conv1d/2d's are its unfolded
    patches. The model runs once under torch.no_grad(), in eval mode, and is put back."""
    recipe = _recipe_of(recipe)
    modules = dict(model.named_modules())
    inputs, hooks = {}, []

    def keep(node, module):
        def hook(_, args):
            x = args[0].detach()
            if isinstance(module, nn.Linear):
                rows = x.reshape(-1, x.shape[-1])
            elif isinstance(module, nn.Conv2d):
                rows = torch.nn.functional.unfold(x, module.kernel_size, module.dilation, module.padding,
                                                  module.stride).transpose(1, 2).reshape(-1, module.weight[0].numel())
            elif isinstance(module, nn.Conv1d):
                rows = torch.nn.functional.unfold(x.unsqueeze(2), (1,) + module.kernel_size, (1,) + module.dilation,
                                                  (0,) + module.padding, (1,) + module.stride)
                rows = rows.transpose(1, 2).reshape(-1, module.weight[0].numel())
            else:
                raise Error(f"compress: calibration: node '{node}' is a {type(module).__name__}; "
                            "its inputs are followed for Linear, Conv1d and Conv2d only")
            gram = rows.to(torch.float64).t() @ rows.to(torch.float64)
            inputs[node] = gram if node not in inputs else inputs[node] + gram
        return hook

    for d in recipe.nodes:
        path = d.node.replace("/", ".")
        if path not in modules:
            raise Error(f"compress: calibration: recipe node '{d.node}' is not a module of the model")
        hooks.append(modules[path].register_forward_pre_hook(keep(d.node, modules[path])))
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(*batch) if isinstance(batch, tuple) else model(batch)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    missing = [d.node for d in recipe.nodes if d.node not in inputs]
    if missing:
        raise Error("compress: calibration: the batch never reached " + ", ".join(f"'{n}'" for n in missing))
    return inputs


def _grams(model, recipe, calibration):
    return {} if calibration is None else calibration_grams(model, recipe, calibration)


def apply_detailed(model, recipe, calibration=None):
    """apply(), returning what each node kept (Applied: bytes, fp32_bytes, nodes)."""
    recipe = _recipe_of(recipe)
    return _engine.apply_recipe(_model_spec(model), recipe, _grams(model, recipe, calibration))


def apply(model, recipe, calibration=None):
    """Applies `recipe` (a Recipe or a recipe JSON file) to `model`'s parameters in place, with
    the C++ compress::apply: weights quantised and dequantised per output unit, pruned units and
    the next node's matching inputs zeroed. Returns the model's size as stored, in bytes.
    Raises gradscope.Error before changing anything when the recipe does not fit the model
    (naming its nodes the model lacks, or whose shapes differ). `calibration`: a batch of
    inputs; given, integer-precision nodes are rounded to minimise their output error on it
    (GPTQ) instead of to nearest, in the same bytes."""
    return apply_detailed(model, recipe, calibration).bytes


def _state_of(model):
    _require_module(model)
    return list(model.state_dict().items())


def save(model, recipe, path, calibration=None):
    """Writes `model` packed under `recipe` (a Recipe or a recipe JSON file) to `path`: per
    recipe node bit-packed integer codes with one FP32 scale per kept unit (or FP16 / FP32
    values), pruned units and the next node's inputs left out, every other parameter and buffer
    as it is; safetensors' layout with gradscope's manifest (docs/compression.md). The model is
    not changed. Returns PackedFileSize (file_bytes = header_bytes + data_bytes, the size on
    disk). Raises gradscope.Error when the recipe does not fit the model. `calibration`: as in
    apply()."""
    recipe = _recipe_of(recipe)
    return _engine.save_packed(_state_of(model), recipe, os.fspath(path), _grams(model, recipe, calibration))


def save_weights(model, path):
    """Every parameter and buffer as it is, nothing compressed: the weights file that
    `gradscope compress RUN --weights` reads."""
    return _engine.save_packed(_state_of(model), None, os.fspath(path))


def load(model, path):
    """Loads a packed file (save(), save_weights(), `gradscope compress --packed` or the C++
    gradscope::compress::save) into `model`, a model of the same architecture: its parameters
    and buffers become the file's, dequantised (equal bit for bit to apply() of the same recipe).
    Raises gradscope.Error before changing anything (and before decoding the file) when the
    file lacks an entry of the model, has one the model lacks, a shape differs or a dtype cannot
    load (an integer entry into a float parameter)."""
    path = os.fspath(path)
    state = dict(_engine.load_packed_state(path, _state_of(model)))
    model.load_state_dict(state, strict=True)
