"""gradscope.compress: compression recipes from training dynamics (docs/compression.md), made
and applied by the C++ engine on a PyTorch model's own parameters.

    with gradscope.Audit(model, run="runs/exp1", channels_all_nodes=gradscope.ChannelView(every=1),
                         keep_steps=0) as audit:
        ...                                                  # train
    profile = gradscope.compress.profile(model, audit, batch=64)
    gradscope.compress.save_profile("runs/exp1", profile)    # units.json: `gradscope compress` reads it
    recipe = gradscope.compress.recipe("runs/exp1", budget_bytes=8000)   # or recipe(profile, ...)
    size = gradscope.compress.apply(model, recipe)           # in place; bytes as stored

A recipe is the JSON `gradscope compress` writes: Recipe.load(path), recipe.to_json(),
Recipe.from_json(text).
"""
import os

from torch import nn

from . import _engine
from ._engine import Applied, Error, NodeDecision, NodeProfile, Recipe

__all__ = ["Applied", "NodeDecision", "NodeProfile", "Recipe", "apply", "apply_detailed", "profile", "recipe",
           "save_profile"]


def _model_spec(model):
    """The whole model as the engine's node spec: every module path and parameter (shared)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"compress: model must be a torch.nn.Module, got {type(model).__name__}")
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


def apply_detailed(model, recipe):
    """apply(), returning what each node kept (Applied: bytes, fp32_bytes, nodes)."""
    return _engine.apply_recipe(_model_spec(model), _recipe_of(recipe))


def apply(model, recipe):
    """Applies `recipe` (a Recipe or a recipe JSON file) to `model`'s parameters in place, with
    the C++ compress::apply: weights quantised and dequantised per output unit, pruned units and
    the next node's matching inputs zeroed. Returns the model's size as stored, in bytes.
    Raises gradscope.Error before changing anything when the recipe does not fit the model
    (naming its nodes the model lacks, or whose shapes differ)."""
    return apply_detailed(model, recipe).bytes
