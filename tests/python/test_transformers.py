"""gradscope.integrations.transformers with the real `transformers` package: Llama-style (grouped-
query attention) and GPT-2-style models from small configs, trained by transformers.Trainer with
GradscopeCallback. One layer's attention at 30x the learning rate is named on that layer, the
healthy runs stay quiet, and the ground truth of each head (its largest logit and its entropy,
computed here in plain PyTorch from the q and k sdpa receives) agrees. The norm before clipping
and each step's loss are the Trainer's own; accumulation, evaluation passes, the saved run, a
Trainer that never steps, bad options and a missing package."""
import math
import os
import sys
import time

import pytest
import torch

import gradscope
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import hf_trainer as hf_models  # noqa: E402  (the models, data and Trainer)
import integration_checks  # noqa: E402

import gradscope.integrations.transformers as gt  # noqa: E402
from gradscope.integrations.transformers import GradscopeCallback, audit_of  # noqa: E402

# ctest runs two test files at once on the two cores: one thread each (and the same numbers).
torch.set_num_threads(1)

# ATTENTION_LOGIT_GROWTH and ATTENTION_ENTROPY_COLLAPSE's thresholds (the Audit's defaults).
LOGIT_LIMIT, ENTROPY_LIMIT = 100.0, 0.1


class HeadTruth:
    """Each training forward's attention per layer, per head, in float64 from the q, k and mask
    that transformers' sdpa receives: the largest logit and the mean over queries of entropy /
    log(keys visible). Installed in place of the stock sdpa that gradscope_sdpa calls."""

    def __init__(self, model):
        self.layer_of = {id(hf_models.attention_of(model, i)[0]): i for i in range(len(hf_models.layers(model)))}
        self.max_logit = {i: 0.0 for i in self.layer_of.values()}
        self.min_entropy = {i: 1.0 for i in self.layer_of.values()}
        self.forwards = 0

    def wrap(self, stock):
        def sdpa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kw):
            if module.training and torch.is_grad_enabled():
                self.measure(module, query, key, attention_mask, scaling, is_causal)
            return stock(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                         is_causal=is_causal, **kw)
        return sdpa

    @torch.no_grad()
    def measure(self, module, q, k, mask, scaling, is_causal):
        layer = self.layer_of[id(module)]
        q, k = q.double(), k.double()
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # grouped-query: each kv head serves its group
        scale = scaling if scaling is not None else q.shape[-1] ** -0.5
        logits = q @ k.transpose(-1, -2) * scale
        tokens = logits.shape[-1]
        if mask is None:  # sdpa's causal case (training: queries = keys)
            visible = torch.ones(tokens, tokens, dtype=torch.bool).tril().expand_as(logits)
        else:
            assert mask.dtype == torch.bool
            visible = mask.expand_as(logits)
        logits = logits.masked_fill(~visible, -math.inf)
        self.max_logit[layer] = max(self.max_logit[layer], float(logits.amax()))
        p = torch.softmax(logits, dim=-1)
        entropy = -(p * torch.where(p > 0, p.log(), torch.zeros_like(p))).sum(-1)
        seen = visible.sum(-1).double()
        several = seen >= 2
        fraction = (entropy / seen.clamp(min=2).log())
        per_head = torch.stack([fraction[:, h][several[:, h]].mean() for h in range(fraction.shape[1])])
        self.min_entropy[layer] = min(self.min_entropy[layer], float(per_head.min()))
        self.forwards += 1

    def unhealthy(self, layer):
        return self.max_logit[layer] > LOGIT_LIMIT or self.min_entropy[layer] < ENTROPY_LIMIT

    def clearly_healthy(self, layer):
        return self.max_logit[layer] < LOGIT_LIMIT / 2 and self.min_entropy[layer] > 2 * ENTROPY_LIMIT


def train(kind, seed, tmp_path, hot_layer=None, steps=150, callback=None, **args):
    model = hf_models.build(kind, seed)
    callback = callback or GradscopeCallback(run=None, print_report=False)
    truth = HeadTruth(model)
    stock = gt.sdpa_attention_forward
    gt.sdpa_attention_forward = truth.wrap(stock)
    try:
        t = hf_models.trainer(model, tmp_path / f"{kind}-{seed}", [callback], steps, seed, hot_layer, **args)
        t.train()
    finally:
        gt.sdpa_attention_forward = stock
    return model, t, callback, truth


def flagged(report):
    return {node: flags for node, flags in report.flags().items() if flags != ["HEALTHY"]}


@pytest.mark.parametrize("kind,seed", [("llama", 0), ("llama", 1), ("gpt2", 0)])
def test_a_layer_at_too_high_a_learning_rate_is_named_on_its_attention(kind, seed, tmp_path):
    model, _, callback, truth = train(kind, seed, tmp_path, hot_layer=1)
    _, hot = hf_models.attention_of(model, 1)
    _, cool = hf_models.attention_of(model, 0)
    assert truth.forwards == 150 * 2  # every training forward of both layers went through gradscope_sdpa
    assert truth.unhealthy(1) and truth.clearly_healthy(0), (truth.max_logit, truth.min_entropy)
    found = flagged(callback.report)
    assert set(found) == {hot}, found
    assert set(found[hot]) & {"ATTENTION_LOGIT_GROWTH", "ATTENTION_ENTROPY_COLLAPSE"}
    # Each attention flag raised is one the truth crosses.
    if "ATTENTION_LOGIT_GROWTH" in found[hot]:
        assert truth.max_logit[1] > LOGIT_LIMIT
    if "ATTENTION_ENTROPY_COLLAPSE" in found[hot]:
        assert truth.min_entropy[1] < ENTROPY_LIMIT
    assert cool not in found
    assert model.config._attn_implementation == "sdpa"  # restored after training


@pytest.mark.parametrize("kind,seed", [("llama", 0), ("llama", 1), ("gpt2", 0)])
def test_healthy_runs_are_quiet(kind, seed, tmp_path):
    model, _, callback, truth = train(kind, seed, tmp_path)
    p = "model.layers" if kind == "llama" else "transformer.h"
    assert all(truth.clearly_healthy(i) for i in truth.max_logit), (truth.max_logit, truth.min_entropy)
    assert callback.report.healthy(), flagged(callback.report)
    assert callback.report.steps == 150
    # The nodes: each layer's attention and MLP, then the head unless it is the embedding (GPT-2's).
    nodes = [f"{p}.{i}.{c}" for i in range(2) for c in
             (("self_attn", "mlp") if kind == "llama" else ("attn", "mlp"))]
    nodes += ["lm_head"] if kind == "llama" else []
    assert gt.default_nodes(model) == nodes == [n for n in callback.report.flags() if "/" not in n]


def test_the_norm_before_clipping_and_the_loss_are_the_trainers(tmp_path):
    """logging_steps=1: the Trainer logs each step's loss and its norm before clipping; the audit
    holds the same numbers. Half the steps are clipped (max_grad_norm at the median norm)."""
    model, t, callback, _ = train("llama", 2, tmp_path, steps=30, max_grad_norm=1.25)
    logs = [h for h in t.state.log_history if "grad_norm" in h]
    norms = [h["grad_norm"] for h in logs]
    losses = [h["loss"] for h in logs]
    assert len(norms) == 30
    s = callback.report.series
    assert s.grad_norm_steps == 30
    assert s.grad_norm_max == pytest.approx(max(norms), rel=1e-5)
    assert s.clip_known_steps == 30
    assert s.clipped_steps == sum(1 for n in norms if n > 1.25 * (1 + 1e-6))
    assert 0 < s.clipped_steps < 30
    assert s.loss_steps == 30
    assert s.first_loss == pytest.approx(losses[0], rel=1e-6)
    assert s.last_loss == pytest.approx(losses[-1], rel=1e-6)


def test_accumulation_and_evaluation_passes(tmp_path):
    """Two micro-batches a step: one audited step per optimizer step, its loss the step's (the
    Trainer's log); evaluation every 4 steps is not training and leaves no trace."""
    evaluated = hf_models.rows(4, 99)
    model, t, callback, truth = train("gpt2", 3, tmp_path, steps=12, gradient_accumulation_steps=2,
                                      eval_strategy="steps", eval_steps=4, per_device_eval_batch_size=16,
                                      eval_dataset=evaluated)
    assert t.state.global_step == 12 and callback.report.steps == 12
    assert sum(1 for h in t.state.log_history if "eval_loss" in h) == 3
    assert truth.forwards == 12 * 2 * 2  # training micro-batches only, both layers
    losses = [h["loss"] for h in t.state.log_history if "loss" in h and "eval_loss" not in h]
    s = callback.report.series
    assert s.loss_steps == 12
    assert s.first_loss == pytest.approx(losses[0], rel=1e-6)
    assert s.last_loss == pytest.approx(losses[-1], rel=1e-6)


def test_the_run_is_saved_under_output_dir_and_the_report_printed(tmp_path, capsys):
    callback = GradscopeCallback(attention_every=5)
    model, t, _, _ = train("gpt2", 4, tmp_path, steps=20, hot_layer=1, callback=callback)
    out = capsys.readouterr().out
    assert callback.run_dir == os.path.join(t.args.output_dir, "gradscope")
    assert f"gradscope: run saved in {callback.run_dir}" in out
    assert "verdict:" in out
    saved = gradscope.load_run(callback.run_dir)
    assert saved.report.steps == 20
    assert saved.report.verdict() == callback.report.verdict()
    assert audit_of(t) is None and callback.audit is None  # closed at the end
    # Without an audit, gradscope_sdpa is sdpa: the same output.
    model.eval()
    x = hf_models.rows(1, 5, batch=2)
    ids = torch.stack([r["input_ids"] for r in x])
    with torch.no_grad():
        stock = model(ids).logits
        model.set_attn_implementation(gt.ATTENTION)
        ours = model(ids).logits
    assert torch.equal(stock, ours)


def test_bf16_autocast_healthy_quiet_and_planted_named(tmp_path):
    """bf16=True: the forward under CPU autocast (q and k reach sdpa in bfloat16)."""
    _, _, quiet, _ = train("llama", 7, tmp_path / "quiet", steps=80, bf16=True)
    assert quiet.report.healthy(), flagged(quiet.report)
    model, _, loud, truth = train("llama", 7, tmp_path / "loud", hot_layer=1, steps=80, bf16=True)
    assert truth.unhealthy(1) and truth.clearly_healthy(0)
    assert set(flagged(loud.report)) == {hf_models.attention_of(model, 1)[1]}


def test_a_training_that_raises_leaves_its_steps_readable_and_the_next_starts_clean(tmp_path):
    class Boom(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 4:
                raise RuntimeError("boom")

    model = hf_models.build("gpt2", 8)
    callback = GradscopeCallback(overwrite=True)
    t = hf_models.trainer(model, tmp_path, [callback, Boom()], 10, 8)
    with pytest.raises(RuntimeError, match="boom"):
        t.train()
    # The run's writer commits from its own thread (RunWriter): the steps ended before the raise
    # reach the disk shortly after it, while the audit stays open. Read until all four are there.
    deadline = time.monotonic() + 60
    saved = gradscope.load_run(os.path.join(tmp_path, "gradscope"))
    while saved.report.steps < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
        saved = gradscope.load_run(os.path.join(tmp_path, "gradscope"))
    assert saved.report.steps == 4
    t = hf_models.trainer(model, tmp_path, [callback], 6, 8)
    t.train()  # the audit left open by the failure is closed; a new one starts
    assert callback.report.steps == 6
    assert model.config._attn_implementation == "sdpa"


def test_a_nan_loss_is_kept_where_the_trainers_log_hides_it(tmp_path):
    """The embedding's output is NaN in the 6th step's forward: the Trainer logs a stand-in loss
    (logging_nan_inf_filter) while the audit keeps the NaN and says from which step."""
    model = hf_models.build("gpt2", 9)
    forwards = []

    def poison(module, inputs, output):
        if module.training:
            forwards.append(1)
            if len(forwards) == 6:
                return output * float("nan")
        return output

    model.get_input_embeddings().register_forward_hook(poison)
    callback = GradscopeCallback(run=None, print_report=False)
    t = hf_models.trainer(model, tmp_path, [callback], 8, 9)
    t.train()
    logged = [h["loss"] for h in t.state.log_history if "loss" in h]
    assert len(logged) == 8 and math.isfinite(logged[5])  # the Trainer's filter
    s = callback.report.series
    assert s.loss_steps == 8 and not math.isfinite(s.last_loss)
    text = str(callback.report)
    assert "DIVERGENCE the loss became nan at step 5" in text, text
    # The first node after the embedding (GPT-2's is tied to the head: no node of its own).
    assert "non-finite values first appeared at step 5 in transformer.h.0.attn (forward, activation)" in text


def test_evaluation_only_and_a_training_without_a_step_say_so(tmp_path, capsys):
    """trainer.evaluate() alone never trains: no audit, no report. Resuming from the checkpoint of
    a training already at max_steps trains no step: an empty report that says so."""
    model = hf_models.build("gpt2", 5)
    callback = GradscopeCallback()
    t = hf_models.trainer(model, tmp_path, [callback], 2, 5, save_strategy="steps", save_steps=2)
    t.evaluate(eval_dataset=hf_models.rows(1, 5))
    assert callback.report is None and callback.audit is None
    hf_models.trainer(model, tmp_path, [], 2, 5, save_strategy="steps", save_steps=2).train()
    capsys.readouterr()
    t.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    assert t.state.global_step == 2
    assert callback.report is not None and callback.report.steps == 0
    assert "no optimizer step ran in this training, so nothing was judged" in capsys.readouterr().out


def test_attention_not_sdpa_is_said_and_the_rest_is_audited(tmp_path, capsys):
    model = hf_models.build("llama", 6)
    model.set_attn_implementation("eager")
    callback = GradscopeCallback(run=None)
    hf_models.trainer(model, tmp_path, [callback], 5, 6).train()
    assert callback.report.steps == 5
    assert "attention not measured: the model's attention implementation is 'eager'" in capsys.readouterr().out
    assert model.config._attn_implementation == "eager"


def test_bad_options_are_refused_with_their_names():
    integration_checks.refuses_decided_options(GradscopeCallback)
    with pytest.raises(gradscope.Error, match="attention must be True or False"):
        GradscopeCallback(attention="yes")


def test_without_transformers_import_gradscope_works_and_the_integration_names_its_extra():
    integration_checks.names_its_extra_when_the_package_is_missing('transformers', 'transformers')
