"""A small word-level LSTM language model in plain PyTorch, for divergence and spike tests.

Modelled on PyTorch's examples/word_language_model: embedding ``encoder`` -> 2-layer
``nn.LSTM`` ``rnn`` -> linear ``decoder``, batchified text read sequentially in bptt
windows, the hidden state detached between batches, plain SGD at lr 20 and
``clip_grad_norm_(..., 0.25)``.  The text is the licences Debian ships in
/usr/share/common-licenses (package base-files): real English, always present, no
download.  Lower-cased words and punctuation marks give 44537 tokens; the vocabulary
is the 1644 words seen at least twice plus ``<unk>`` (1645 ids; 556 rare words map to
``<unk>``).

CONFIGS (SGD, batch 20 x bptt 35, seeds 0-4 measured):
  ``blowup``       the recipe without clipping (lr 20): the loss passes 1.5x its start
                   (7.40) at step 4 (seed 1: step 7) and peaks at 39-260 within 20 steps;
                   it stays far above on seeds 0 and 1 (loss 191 and 17 at step 200), but
                   seeds 2-4 are back under 1.5x for good from steps 18, 88 and 27 and end
                   near the unigram plateau (5.6-6.1 at step 200).
  ``blowup_lr40``  the same at lr 40: past 1.5x at step 2 and never below 15 after step 10.
  ``clipped``      the recipe as shipped (lr 20, clip 0.25): no blow-up, 5.3 at step 200,
                   4.8 at step 300; ``healthy`` is the same run.
  ``shuffle``, ``scale``, ``random``  the healthy run for 300 steps with one planted
                   fault at step 250 (see train).  The model sits on the unigram plateau
                   (loss ~5.56, the text's unigram entropy) until ~step 120, so a fault
                   planted before then barely shows in the loss.

``train`` returns plain per-step truth (losses, gradient norms before and after
clipping, per-module gradient norms) that a monitor can be checked against.  Run
``.venv/bin/python examples/lstm_lm.py blowup clipped 0 1 2 3 4`` for a table of per-seed
results.
"""
import math
import os
import re
import statistics
import sys
import time
from collections import Counter

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from licence_text import licence_text  # noqa: E402

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")  # words (with 's, n't ...) or one mark
NODES = ("encoder", "rnn", "decoder")
CORRUPTIONS = ("shuffle", "scale", "random")
_CORPUS = None


def load_corpus():
    """Return (data, vocab_size): the licence texts as a LongTensor of word ids.

    The text is licence_text()'s (licence_text.py).
    Tokens are TOKEN matches in the lower-cased text.  Id 0 is ``<unk>``; ids 1.. are
    the words seen at least twice, most frequent first (ties alphabetical).
    """
    global _CORPUS
    if _CORPUS is None:
        tokens = TOKEN.findall(licence_text().lower())
        counts = Counter(tokens)
        words = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: (-counts[w], w))
        index = {w: i + 1 for i, w in enumerate(words)}
        _CORPUS = (torch.tensor([index.get(t, 0) for t in tokens], dtype=torch.long), len(words) + 1)
    return _CORPUS


def batchify(data, batch):
    """[N] -> [N // batch, batch]: ``batch`` contiguous streams side by side (the recipe's)."""
    n = data.size(0) // batch
    return data[:n * batch].view(batch, n).t().contiguous()


class LSTMLM(nn.Module):
    """``encoder`` (nn.Embedding) -> dropout -> ``rnn`` (nn.LSTM) -> dropout -> ``decoder`` (nn.Linear).

    Initialised as the recipe does: encoder and decoder weights uniform in
    [-init_range, init_range], decoder bias zero, the LSTM at PyTorch's default.
    """

    def __init__(self, vocab_size, emb=128, hidden=128, layers=2, dropout=0.2, init_range=0.1):
        super().__init__()
        self.layers, self.hidden = layers, hidden
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, emb)
        self.rnn = nn.LSTM(emb, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, vocab_size)
        nn.init.uniform_(self.encoder.weight, -init_range, init_range)
        nn.init.uniform_(self.decoder.weight, -init_range, init_range)
        nn.init.zeros_(self.decoder.bias)

    def init_hidden(self, batch):
        w = self.decoder.weight
        return (w.new_zeros(self.layers, batch, self.hidden), w.new_zeros(self.layers, batch, self.hidden))

    def forward(self, x, hidden, emb_scale=1.0):
        """x [T, batch] -> (logits [T, batch, vocab], hidden).  ``emb_scale`` multiplies
        the input embeddings (the planted ``scale`` fault; 1.0 otherwise)."""
        e = self.encoder(x)
        if emb_scale != 1.0:
            e = e * emb_scale
        out, hidden = self.rnn(self.drop(e), hidden)
        return self.decoder(self.drop(out)), hidden


def grad_norm(params):
    """Global L2 norm of the parameters' gradients (None gradients count as zero), in float64."""
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params if p.grad is not None))


def truth_grad_norms(model):
    """(global gradient L2, {node: L2 of that module's parameter gradients}) as plain floats."""
    nodes = {n: grad_norm(list(getattr(model, n).parameters())) for n in NODES}
    return math.sqrt(sum(v * v for v in nodes.values())), nodes


def default_step(step, model, optimizer, clip):
    """The recipe's update: clip the global gradient norm to ``clip`` (None: no clipping),
    then ``optimizer.step()``.  A ``step_fn`` given to train replaces exactly this."""
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


_BASE = dict(lr=20.0, clip=0.25, batch=20, bptt=35, emb=128, hidden=128, layers=2, dropout=0.2,
             init_range=0.1, steps=200, corrupt_step=None, corrupt="shuffle")
# blowup: the recipe with its clipping removed; clipped (= healthy): the recipe as shipped.
# The model sits on the unigram plateau (loss ~5.56, the corpus's unigram entropy) until
# ~step 120 and uses context after, so a corrupted batch shows in the loss only later:
# the planted faults are at step 250 of 300.
CONFIGS = {
    "blowup": dict(_BASE, clip=None),
    "blowup_lr40": dict(_BASE, clip=None, lr=40.0),
    "clipped": dict(_BASE),
    "healthy": dict(_BASE),
}
for _fault in CORRUPTIONS:
    CONFIGS[_fault] = dict(_BASE, steps=300, corrupt_step=250, corrupt=_fault)


def train(config_name, seed, steps=None, on_step=None, step_fn=None, model_hook=None, **overrides):
    """Train LSTMLM with SGD on the licence text; deterministic given ``seed``.

    ``config_name`` names a CONFIGS entry (or is a config dict); ``overrides`` replace
    its keys (``lr``, ``clip``, ``corrupt_step``, ``corrupt``, ...).  Batches are read in
    order: step k uses batch index k % batches_per_epoch whatever the seed, and the hidden
    state is reset to zero at each epoch's start and detached between batches.

    Hooks, all optional:
      ``model_hook(model)`` runs once after construction (to attach monitors);
      ``on_step(step, model, loss, optimizer)`` runs after ``loss.backward()`` and before
      the update: the gradients are the raw, unclipped ones;
      ``step_fn(step, model, optimizer, clip)`` replaces the update itself (clipping and
      ``optimizer.step()``; ``default_step`` is what runs otherwise), so a caller can wrap
      it: ``step_fn=lambda s, m, o, c: (before(s), default_step(s, m, o, c), after(s))``.
      The truth norms are taken before on_step; ``grad_norm_clipped`` after step_fn.

    At ``corrupt_step`` the batch's targets are permuted at random (``corrupt="shuffle"``:
    the unigram statistics are kept), replaced by uniformly random ids (``"random"``), or
    the input embeddings multiplied by 100 (``"scale"``, a forward flag; data unchanged).

    Returns a dict of per-step lists: ``loss`` (that batch's loss, before the update),
    ``grad_norm`` (global gradient L2 before clipping), ``grad_norm_clipped`` (read from
    the gradients after the update), ``node_grad_norm`` {encoder, rnn, decoder: [...]}
    (before clipping), ``batch_index``, ``clipped`` (bool: clip set and grad_norm > clip);
    plus ``config``, ``vocab``, ``tokens``, ``seconds`` (wall) and ``cpu_seconds`` (this process).
    """
    cfg = dict(CONFIGS[config_name] if isinstance(config_name, str) else config_name)
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise KeyError(f"unknown config keys {sorted(unknown)}")
    cfg.update(overrides)
    steps = cfg["steps"] if steps is None else steps
    if cfg["corrupt"] not in CORRUPTIONS:
        raise ValueError(f"corrupt must be one of {CORRUPTIONS}, not {cfg['corrupt']!r}")
    data, vocab = load_corpus()
    source = batchify(data, cfg["batch"])
    bptt = cfg["bptt"]
    per_epoch = (source.size(0) - 1) // bptt  # full windows only, so every step's batch has one shape
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = LSTMLM(vocab, cfg["emb"], cfg["hidden"], cfg["layers"], cfg["dropout"], cfg["init_range"])
    if model_hook is not None:
        model_hook(model)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    update = default_step if step_fn is None else step_fn
    out = dict(loss=[], grad_norm=[], grad_norm_clipped=[], node_grad_norm={n: [] for n in NODES},
               batch_index=[], clipped=[], config=cfg, vocab=vocab, tokens=len(data))
    start, cpu_start = time.time(), time.process_time()
    for step in range(steps):
        b = step % per_epoch
        if b == 0:
            hidden = model.init_hidden(cfg["batch"])
        hidden = tuple(h.detach() for h in hidden)
        x, y = source[b * bptt:(b + 1) * bptt], source[b * bptt + 1:(b + 1) * bptt + 1]
        corrupt = cfg["corrupt_step"] is not None and step == cfg["corrupt_step"]
        if corrupt and cfg["corrupt"] == "shuffle":
            y = y.flatten()[torch.randperm(y.numel(), generator=gen)].view_as(y)
        elif corrupt and cfg["corrupt"] == "random":
            y = torch.randint(0, vocab, y.shape, generator=gen)
        optimizer.zero_grad(set_to_none=True)
        logits, hidden = model(x, hidden, emb_scale=100.0 if corrupt and cfg["corrupt"] == "scale" else 1.0)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        total, nodes = truth_grad_norms(model)
        if on_step is not None:
            on_step(step, model, loss, optimizer)
        update(step, model, optimizer, cfg["clip"])
        out["loss"].append(loss.item())
        out["grad_norm"].append(total)
        out["grad_norm_clipped"].append(grad_norm(model.parameters()))
        for n in NODES:
            out["node_grad_norm"][n].append(nodes[n])
        out["batch_index"].append(b)
        out["clipped"].append(cfg["clip"] is not None and total > cfg["clip"])
    out["seconds"], out["cpu_seconds"] = time.time() - start, time.process_time() - cpu_start
    return out


def first_spike(values, factor=10.0, min_history=1):
    """First step whose value exceeds ``factor`` x the median of all earlier steps (or is
    non-finite), given at least ``min_history`` earlier steps; None if none does."""
    for i in range(max(min_history, 1), len(values)):
        v = values[i]
        if not math.isfinite(v) or v > factor * statistics.median(values[:i]):
            return i
    return None


def summarize(result):
    """One table row: first divergence and gradient-spike steps, norm extremes, final loss."""
    loss, g = result["loss"], result["grad_norm"]
    diverged = next((i for i, v in enumerate(loss) if not math.isfinite(v) or v > 1.5 * loss[0]), None)
    node_first = {n: first_spike(v) for n, v in result["node_grad_norm"].items()}
    hits = [(s, n) for n, s in node_first.items() if s is not None]
    finite = [v for v in g if math.isfinite(v)]
    return dict(diverged=diverged, spike=first_spike(g), max_norm=max(finite) if finite else float("nan"),
                median_norm=statistics.median(g), final_loss=loss[-1], node=min(hits) if hits else None,
                seconds=result["seconds"])


if __name__ == "__main__":
    torch.set_num_threads(1)
    names = [a for a in sys.argv[1:] if a in CONFIGS] or list(CONFIGS)
    seeds = [int(a) for a in sys.argv[1:] if a.isdigit()] or list(range(5))
    print(f"{'config':11} seed {'loss>1.5x':>9} {'norm>10x':>8} {'max_norm':>10} {'med_norm':>9} {'loss':>8} "
          f"{'first node >10x':>16} {'s':>5}")
    for name in names:
        for seed in seeds:
            r = summarize(train(name, seed))
            node = f"{r['node'][1]}@{r['node'][0]}" if r["node"] else "-"
            print(f"{name:11} {seed:4} {str(r['diverged']):>9} {str(r['spike']):>8} {r['max_norm']:10.3g} "
                  f"{r['median_norm']:9.3g} {r['final_loss']:8.3f} {node:>16} {r['seconds']:5.1f}")
