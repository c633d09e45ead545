"""The word-level LSTM of lstm_lm.py, audited: the loss, the batch index and the global gradient
norm before clipping handed to the audit every step (docs/spikes.md). Used by the spike
validation (tests/python/spike_validation.py) and make demo's blow-up pair.

    PYTHONPATH=build/python .venv/bin/python examples/lstm_audit.py blowup [seed] [run dir]
"""
import os
import sys

import torch

import gradscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lstm_lm as lm  # noqa: E402  (plain PyTorch: the model, its training and the truth)


def batches_per_epoch(cfg):
    data, _ = lm.load_corpus()
    return (lm.batchify(data, cfg["batch"]).size(0) - 1) // cfg["bptt"]


def audited(name, seed, steps=None, run=None, run_name=None, **overrides):
    """Trains lstm_lm's `name` run with the audit on encoder, rnn and decoder; returns (truth,
    report). The update goes through the audit: audit.clip_grad_norm_(clip) when the run clips
    (it records the norm before and after), else the norm before the step is recorded as it
    is; then audit.step(optimizer, loss=..., batch=...)."""
    cfg = dict(lm.CONFIGS[name], **overrides)
    per_epoch = batches_per_epoch(cfg)
    held = {}

    def attach(model):
        held["audit"] = gradscope.Audit(model, nodes=list(lm.NODES), run=run, run_name=run_name,
                                        overwrite=run is not None)

    def on_step(step, model, loss, optimizer):
        held["loss"] = loss.detach()

    def step_fn(step, model, optimizer, clip):
        audit = held["audit"]
        if clip is not None:
            audit.clip_grad_norm_(clip)
        else:
            audit.record_grad_norm(lm.grad_norm(model.parameters()))
        audit.step(optimizer, loss=held["loss"], batch=step % per_epoch)

    torch.set_num_threads(1)
    truth = lm.train(name, seed, steps=steps, model_hook=attach, on_step=on_step, step_fn=step_fn, **overrides)
    held["audit"].close()
    return truth, held["audit"].report()


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "blowup"
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    truth, report = audited(name, seed, run=sys.argv[3] if len(sys.argv) > 3 else None)
    print(report)
    print(f"final loss {truth['loss'][-1]:.3f}")
