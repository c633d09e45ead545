"""A small character-level GPT in plain PyTorch, for attention-instability tests.

Trained on the licence texts Debian ships in /usr/share/common-licenses, so the
data is real English, always present and needs no download.  CONFIGS holds
settings that do (``unstable``) and do not (``healthy``, ``qknorm``, ``bf16``)
grow the pre-softmax attention logits until attention collapses onto one key
(Dehghani et al. 2023; Wortsman et al. 2023), a deep post-LN model whose
gradients grow toward the output at initialisation (Xiong et al. 2020), and two
whose loss spikes at a high learning rate (``spiky``, ``spiky_warmup``).

``truth_stats`` is the plain ground truth that the C++ attention statistics are
compared against.  Run ``.venv/bin/python examples/transformer_lm.py unstable qknorm 0 1 2``
for a table of per-seed results.
"""
import math
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from licence_text import licence_text  # noqa: E402

_TEXT = None


def load_text():
    """Return (data, vocab_size): the licence texts as a LongTensor of character ids.

    The text is licence_text()'s (licence_text.py).
    The vocabulary is the sorted set of characters in the text.
    """
    global _TEXT
    if _TEXT is None:
        text = licence_text()
        chars = sorted(set(text))
        index = {c: i for i, c in enumerate(chars)}
        _TEXT = (torch.tensor([index[c] for c in text], dtype=torch.long), len(chars))
    return _TEXT


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with the pre-softmax logits computed explicitly.

    ``on_logits(module, logits, mask)``, when set, sees logits [batch, heads, T, T]
    before masking and the bool mask [T, T] (True where a query may attend), which is
    what an attention monitor needs.  ``qk_norm`` applies LayerNorm over the head
    dimension to q and k, which bounds the logits (Dehghani et al. 2023).
    """

    def __init__(self, d, n_head, qk_norm=False, sdpa=False):
        super().__init__()
        assert d % n_head == 0
        self.n_head, self.head_dim = n_head, d // n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else None
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else None
        self.sdpa = sdpa
        self.on_logits = None
        self.on_qk = None

    def forward(self, x):
        B, T, d = x.shape
        # [B, T, 3d] -> three tensors of [B, heads, T, head_dim]
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if self.sdpa:
            # nanoGPT's way: the fused kernel, which never materialises the logits. on_qk sees
            # what a monitor of it can; on_logits (the truth, for tests) gets logits computed
            # apart from the forward, which they do not change.
            if self.on_qk is not None:
                self.on_qk(self, q, k)
            if self.on_logits is not None:
                with torch.no_grad():
                    self.on_logits(self, q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), mask)
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, d))
        logits = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.on_logits is not None:
            self.on_logits(self, logits, mask)
        weights = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, d)
        return self.proj(y)


class Block(nn.Module):
    """Transformer block: pre-LN (x + attn(ln1(x))) or, with post_ln, ln1(x + attn(x))."""

    def __init__(self, d, n_head, qk_norm=False, post_ln=False, sdpa=False):
        super().__init__()
        self.post_ln = post_ln
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, qk_norm, sdpa)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        if self.post_ln:
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Token + position embeddings, ``blocks``, final LayerNorm ``ln_f`` and a linear ``head``."""

    def __init__(self, vocab_size, d=64, n_head=4, n_layer=2, T=64, qk_norm=False, post_ln=False, init_std=0.02,
                 sdpa=False):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d)
        self.pos_emb = nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, n_head, qk_norm, post_ln, sdpa) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab_size)
        # Normal weights, zero biases; 0.02 is GPT-2's choice.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=init_std)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        """Return (logits [B, T, vocab], mean cross-entropy or None)."""
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            # float() so the loss is taken in float32 under bf16 autocast
            loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        return logits, loss


def truth_stats(logits, mask):
    """Per-head attention statistics, computed the plain way (the test's ground truth).

    logits [batch, heads, T, T] pre-softmax, mask [T, T] bool (True = may attend).
    Returns four [heads] tensors:
      max_logit        largest visible logit over batch and queries;
      mean_entropy     attention entropy in nats per query, averaged over batch and queries;
      entropy_fraction entropy / log(visible keys), averaged over queries seeing >= 2 keys;
      top_frac         fraction of (batch, query) rows whose largest weight exceeds 0.99
                       (query 0 sees one key, so this is at least 1/T and entropy 0 there).
    """
    logits = logits.detach().float()
    masked = logits.masked_fill(~mask, float("-inf"))
    p = torch.softmax(masked, dim=-1)
    max_logit = masked.amax(dim=(0, 2, 3))
    # 0 * log 0 = 0 for masked keys and for weights that underflow to zero.
    plogp = torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))
    ent = -plogp.sum(-1)                                    # [B, H, T]
    mean_entropy = ent.mean(dim=(0, 2))
    n_visible = mask.sum(-1)                                # [T]
    several = n_visible >= 2
    entropy_fraction = (ent[:, :, several] / torch.log(n_visible[several].float())).mean(dim=(0, 2))
    top_frac = (p.amax(-1) > 0.99).float().mean(dim=(0, 2))
    return max_logit, mean_entropy, entropy_fraction, top_frac


_BASE = dict(lr=1e-3, warmup=50, weight_decay=0.1, qk_norm=False, post_ln=False, n_layer=2,
             d=64, n_head=4, T=64, batch=16, steps=200, bf16=False, clip=1.0, init_std=0.02)
# unstable: 30x the lr with no warm-up, clipping or decay; block 0's logits pass 100 within
# ~20 steps and its heads collapse onto one key by ~50 (seeds 0-4).  postln_deep uses
# init_std 1/sqrt(d) so residual branches are O(1) and post-LN's gradient growth shows.
CONFIGS = {
    "healthy": dict(_BASE),
    "unstable": dict(_BASE, lr=3e-2, warmup=0, weight_decay=0.0, clip=None),
    "postln_deep": dict(_BASE, post_ln=True, n_layer=6, lr=1e-3, warmup=0, clip=None, init_std=0.125),
    "bf16": dict(_BASE, bf16=True),
}
CONFIGS["qknorm"] = dict(CONFIGS["unstable"], qk_norm=True)
# spiky: the healthy run to step 200, then restarted at unstable's lr 3e-2 (30x; clipping and
# decay kept): the loss jumps 1-1.6 nats at step 201, above mean + 6 sd of its last 128 values
# on seeds 0-4, and stays above the highest of those 128 for 12 to 37 steps (torch 2.13).
# Its control is healthy trained for the same 240 steps.  (Raised at step 150 or 170 the
# jump is smaller than 6 sd of a band that still holds the early descent.)
CONFIGS["spiky"] = dict(_BASE, steps=240, lr_raise=(200, 3e-2))
# spiky_warmup: 3 blocks at init_std 0.003 warmed up to lr 1e-2 over 45 steps, no clipping or
# decay: as the loss leaves its unigram plateau (steps 16-19, lr near 4e-3) one update turns
# block 0's attention and the loss doubles for a step, then comes back.  On seeds 1-4, not 0.
CONFIGS["spiky_warmup"] = dict(_BASE, lr=1e-2, warmup=45, weight_decay=0.0, clip=None, n_layer=3, init_std=0.003,
                               steps=60)
# postln_stuck: postln_deep at 3x its lr (3e-3), still without warm-up: the loss stays on the
# unigram plateau (3.21 nats) for 200 steps on seeds 0-4 while the gradient of block 0 falls
# 100-4000x below block 5's; postln_warmup (the same with 50 warm-up steps) and preln_deep (the
# same pre-LN) leave the plateau on every seed (Xiong et al. 2020: post-LN needs warm-up).
CONFIGS["postln_stuck"] = dict(CONFIGS["postln_deep"], lr=3e-3)
CONFIGS["postln_warmup"] = dict(CONFIGS["postln_stuck"], warmup=50)
CONFIGS["preln_deep"] = dict(CONFIGS["postln_stuck"], post_ln=False)
# The same GPT written the nanoGPT way: attention through scaled_dot_product_attention(is_causal=True).
for _name in ("healthy", "unstable", "qknorm", "bf16"):
    CONFIGS[_name + "_sdpa"] = dict(CONFIGS[_name], sdpa=True)


def fixed_batches(cfg, count=10, seed=0):
    """`count` (inputs, targets) batches of ``cfg``'s context and batch size, drawn from the text
    with a generator of ``seed``: the same steps for every arm of a benchmark."""
    data, _ = load_text()
    gen = torch.Generator().manual_seed(seed)
    T, B = cfg["T"], cfg["batch"]
    out = []
    for _ in range(count):
        s = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        out.append((torch.stack([data[i:i + T] for i in s]), torch.stack([data[i + 1:i + T + 1] for i in s])))
    return out


def train(name_or_config, seed, steps=None, on_step=None, model_hook=None, on_grad_norm=None):
    """Train TinyGPT with AdamW on the licence text; deterministic given ``seed``.

    ``model_hook(model)`` runs after construction so callers can attach monitors (an
    ``on_logits`` they set is kept and still called).  ``on_step(step, model, loss)``
    runs after each optimizer step; ``on_grad_norm(step, before, after)`` after clipping,
    before the optimizer step, with the global gradient L2 before and after clipping.  A
    config's ``lr_raise`` = (step, lr) sets the learning rate from that step on.  Returns a
    dict: ``loss`` [step], ``max_logit`` and ``entropy`` [step][block][head] from
    truth_stats on each training forward pass, ``grad_norm`` [step][block] and
    ``global_grad_norm`` [step] (before clipping), ``finite`` (final loss finite),
    ``config`` and ``seconds``.
    """
    cfg = dict(CONFIGS[name_or_config] if isinstance(name_or_config, str) else name_or_config)
    steps = cfg["steps"] if steps is None else steps
    data, vocab = load_text()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], cfg["qk_norm"], cfg["post_ln"],
                    cfg["init_std"], cfg.get("sdpa", False))
    if model_hook is not None:
        model_hook(model)
    stats = {}  # block index -> (max_logit, entropy) from the latest forward

    def collector(i, previous):
        def on_logits(module, logits, mask):
            if previous is not None:
                previous(module, logits, mask)
            with torch.no_grad():
                mx, ent, _, _ = truth_stats(logits, mask)
            stats[i] = (mx.tolist(), ent.tolist())
        return on_logits

    for i, block in enumerate(model.blocks):
        block.attn.on_logits = collector(i, block.attn.on_logits)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    out = dict(loss=[], max_logit=[], entropy=[], grad_norm=[], global_grad_norm=[], config=cfg)
    T, B = cfg["T"], cfg["batch"]
    start = time.time()
    for step in range(steps):
        # Linear warm-up, then constant: the instability is about the early steps.
        lr = cfg["lr"] * min(1.0, (step + 1) / cfg["warmup"]) if cfg["warmup"] else cfg["lr"]
        if cfg.get("lr_raise") is not None and step >= cfg["lr_raise"][0]:
            lr = cfg["lr_raise"][1]  # from that step on: a restart at a learning rate too high
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        x = torch.stack([data[s:s + T] for s in starts])
        y = torch.stack([data[s + 1:s + T + 1] for s in starts])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg["bf16"]):
            _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        out["grad_norm"].append([
            math.sqrt(sum(float(p.grad.pow(2).sum()) for p in b.parameters() if p.grad is not None))
            for b in model.blocks])
        # The global L2 of the gradients as backward produced them (before clipping).
        total = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
        out["global_grad_norm"].append(total)
        if cfg["clip"] is not None:
            nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"])
        if on_grad_norm is not None:
            # torch scales by clip / (norm + 1e-6) where that is below 1
            factor = cfg["clip"] / (total + 1e-6) if cfg["clip"] is not None else 1.0
            on_grad_norm(step, total, total * factor if factor < 1 else total)
        opt.step()
        out["loss"].append(loss.item())
        out["max_logit"].append([stats[i][0] for i in range(len(model.blocks))])
        out["entropy"].append([stats[i][1] for i in range(len(model.blocks))])
        if on_step is not None:
            on_step(step, model, loss)
    out["finite"] = bool(out["loss"]) and math.isfinite(out["loss"][-1])
    out["seconds"] = time.time() - start
    return out


def summarize(result, logit_limit=100.0, entropy_limit=0.1):
    """One table row: first steps crossing the limits, extremes over the run, final loss."""
    mx = [max(max(h) for h in step) for step in result["max_logit"]]
    ent = [min(min(h) for h in step) for step in result["entropy"]]
    first = lambda xs, ok: next((i for i, v in enumerate(xs) if ok(v)), None)
    return dict(first_logit=first(mx, lambda v: v > logit_limit), first_entropy=first(ent, lambda v: v < entropy_limit),
                max_logit=max(mx), min_entropy=min(ent), final_loss=result["loss"][-1], seconds=result["seconds"])


if __name__ == "__main__":
    torch.set_num_threads(1)
    names = [a for a in sys.argv[1:] if a in CONFIGS] or list(CONFIGS)
    seeds = [int(a) for a in sys.argv[1:] if a.isdigit()] or list(range(5))
    print(f"{'config':12} seed {'step>100':>8} {'step<0.1':>8} {'max_logit':>10} {'min_ent':>8} {'loss':>7} {'s':>5}")
    for name in names:
        for seed in seeds:
            r = summarize(train(name, seed))
            print(f"{name:12} {seed:4} {str(r['first_logit']):>8} {str(r['first_entropy']):>8} {r['max_logit']:10.1f} "
                  f"{r['min_entropy']:8.3f} {r['final_loss']:7.3f} {r['seconds']:5.1f}")
