"""A transformer with its own attention, audited: every block's attention and MLP and the head
as nodes, the attention's logits handed to the audit with one call, or, in the configs that
use scaled_dot_product_attention (``*_sdpa``), its q and k (docs/attention.md). Used by
make demo's GPT trio, the transformer validation and make bench-transformer.

    PYTHONPATH=build/python .venv/bin/python examples/transformer_audit.py unstable [seed] [run dir]
"""
import os
import sys

import torch

import gradscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_lm as lm  # noqa: E402  (plain PyTorch: the model, its training and the truth)


def audit_nodes(model):
    n = len(model.blocks)
    return [f"blocks.{i}.attn" for i in range(n)] + [f"blocks.{i}.mlp" for i in range(n)] + ["head"]


def audited(name, seed, run=None, run_name=None, truth_fractions=False):
    """Trains transformer_lm's `name` run with the audit (attention every 10th step, the
    default); returns (truth, report). `run` saves it as a gradscope run. With truth_fractions,
    truth["entropy_fraction"][step][block][head] is computed too, in plain PyTorch at every step."""
    held = {"fraction": [], "this_step": {}}

    def attach(model):
        audit = gradscope.Audit(model, nodes=audit_nodes(model), run=run, run_name=run_name, overwrite=run is not None)
        for i, block in enumerate(model.blocks):
            def on_logits(module, logits, mask, i=i):
                if truth_fractions:
                    with torch.no_grad():
                        held["this_step"][i] = lm.truth_stats(logits, mask)[2].tolist()
                if not module.sdpa:
                    audit.attention(module, logits, mask)  # the one call: mask True where a query may attend
            block.attn.on_logits = on_logits
            # With scaled_dot_product_attention: q and k, the logits computed at measured steps only.
            block.attn.on_qk = lambda module, q, k: audit.attention(module, q=q, k=k, is_causal=True)
        held["audit"] = audit

    def on_step(step, model, loss):
        held["audit"].record_loss(loss.item())  # the loss rules and DEPTH_GRADIENT_IMBALANCE read it
        held["audit"].after_step()  # the loop calls opt.step() itself
        if truth_fractions:
            held["fraction"].append([held["this_step"][i] for i in sorted(held["this_step"])])

    torch.set_num_threads(1)
    truth = lm.train(name, seed, model_hook=attach, on_step=on_step)
    held["audit"].close()
    if truth_fractions:
        truth["entropy_fraction"] = held["fraction"]
    return truth, held["audit"].report()


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "unstable"
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    truth, report = audited(name, seed, run=sys.argv[3] if len(sys.argv) > 3 else None)
    print(report)
    print(f"final loss {truth['loss'][-1]:.3f}")
