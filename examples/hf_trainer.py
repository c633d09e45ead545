"""Small Hugging Face causal LMs from configs (random weights, no download) trained by
transformers.Trainer with gradscope's callback, on the licence texts with a character vocabulary
(transformer_lm.py): a Llama-style model with grouped-query attention (4 query heads, 2 key/value
heads) and a GPT-2-style one, 2 layers each. The planted fault: one layer's attention at 30x the
learning rate. Used by tests/python/test_transformers.py and the README's first screen.

    PYTHONPATH=build/python .venv/bin/python examples/hf_trainer.py unstable [llama|gpt2] [seed]
"""
import os
import sys

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_lm as lm  # noqa: E402

transformers.logging.set_verbosity_error()

CONTEXT, BATCH, LR = 64, 16, 1e-3


def build(kind, seed):
    """A 2-layer "llama" or "gpt2" model, its weights drawn with `seed`."""
    _, vocab = lm.load_text()
    torch.manual_seed(seed)
    if kind == "llama":
        return LlamaForCausalLM(LlamaConfig(
            vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=CONTEXT, bos_token_id=None, eos_token_id=None,
            pad_token_id=None))
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=CONTEXT,
                                          bos_token_id=None, eos_token_id=None))
    raise ValueError(kind)


def layers(model):
    return model.model.layers if hasattr(model, "model") else model.transformer.h


def attention_of(model, layer):
    """The attention module of `layer` and its node id (a path of model.named_modules())."""
    block = layers(model)[layer]
    module = block.self_attn if hasattr(block, "self_attn") else block.attn
    return module, next(name for name, m in model.named_modules() if m is module)


def rows(steps, seed, batch=BATCH):
    """`steps` x `batch` training examples (input_ids = labels: the model shifts them), drawn
    from the text with a generator of `seed`."""
    data, _ = lm.load_text()
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(data) - CONTEXT - 1, (steps * batch,), generator=gen)
    return [{"input_ids": data[s:s + CONTEXT], "labels": data[s:s + CONTEXT]} for s in starts.tolist()]


def optimizer(model, hot_layer=None, hot_lr=3e-2):
    """AdamW at LR, and with `hot_layer` that layer's attention at `hot_lr` (the planted fault)."""
    hot = set() if hot_layer is None else {id(p) for p in attention_of(model, hot_layer)[0].parameters()}
    groups = [{"params": [p for p in model.parameters() if id(p) not in hot], "lr": LR}]
    if hot:
        groups.append({"params": [p for p in model.parameters() if id(p) in hot], "lr": hot_lr})
    return torch.optim.AdamW(groups, weight_decay=0.0)


def trainer(model, out, callbacks, steps, seed, hot_layer=None, eval_dataset=None, **args):
    """A Trainer on the CPU with a constant learning rate and clipping at 1 (TrainingArguments'
    `args` override)."""
    options = dict(output_dir=str(out), per_device_train_batch_size=BATCH, max_steps=steps,
                   lr_scheduler_type="constant", max_grad_norm=1.0, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, seed=seed,
                   disable_tqdm=True, log_level="error")
    options.update(args)
    accumulate = options.get("gradient_accumulation_steps", 1)
    t = Trainer(model=model, args=TrainingArguments(**options), callbacks=callbacks,
                train_dataset=rows(steps * accumulate, seed), eval_dataset=eval_dataset,
                optimizers=(optimizer(model, hot_layer), None))
    t.remove_callback(PrinterCallback)  # each step's log printed: noise in the tests' output
    return t


if __name__ == "__main__":
    from gradscope.integrations.transformers import GradscopeCallback
    name = sys.argv[1] if len(sys.argv) > 1 else "unstable"
    kind = sys.argv[2] if len(sys.argv) > 2 else "llama"
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    if name not in ("healthy", "unstable"):
        sys.exit(f"usage: hf_trainer.py healthy|unstable [llama|gpt2] [seed]; got {name!r}")
    torch.set_num_threads(1)
    model = build(kind, seed)
    callback = GradscopeCallback(run=f"gradscope-{name}", overwrite=True)
    trainer(model, "hf-trainer-out", [callback], 150, seed, hot_layer=1 if name == "unstable" else None,
            logging_steps=50).train()
