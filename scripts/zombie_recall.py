"""Recall and precision of ZOMBIE_ROWS on a large table with planted oscillating rows
(docs/embedding.md, "Recall at 1M rows").

A sparse nn.Embedding on plain SGD (lr 0.5) starts at its targets; each step draws `--batch`
lookups from a Zipf law (exponent 1.05, rows shuffled), and the loss pulls every looked-up row
towards its target plus noise. Planted rows (drawn among rows expected at least 6 times) have a
target that flips along a direction of their own at every lookup: their updates reverse. The
ground truth is that list; the tracker's report lists every flagged row. Prints one JSON line.

    PYTHONPATH=build/python .venv/bin/python scripts/zombie_recall.py --rows 1000000 --steps 1000 \\
        --planted 1535 --rule windowed
"""
import argparse
import json
import time

import numpy as np
import torch
from torch import nn

import gradscope


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--rows", type=int, default=1_000_000)
    a.add_argument("--dim", type=int, default=32)
    a.add_argument("--steps", type=int, default=1000)
    a.add_argument("--batch", type=int, default=4096)
    a.add_argument("--planted", type=int, default=1535)
    a.add_argument("--strength", type=float, default=1.0, help="size of the planted flip")
    a.add_argument("--noise", type=float, default=0.05, help="target noise per coordinate")
    a.add_argument("--rule", choices=["windowed", "gradtracer"], default="windowed")
    a.add_argument("--seed", type=int, default=1)
    o = a.parse_args()

    g = torch.Generator().manual_seed(o.seed)
    rng = np.random.default_rng(o.seed)
    w = 1.0 / (np.arange(o.rows) + 10.0) ** 1.05
    p = np.empty(o.rows)
    p[rng.permutation(o.rows)] = w / w.sum()
    candidates = np.flatnonzero(p * o.batch * o.steps >= 6)
    planted = rng.choice(candidates, size=min(o.planted, len(candidates)), replace=False)
    is_planted = np.zeros(o.rows, bool)
    is_planted[planted] = True

    emb = nn.Embedding(o.rows, o.dim, sparse=True)
    target = torch.randn(o.rows, o.dim, generator=g) * 0.5
    direction = torch.randn(o.rows, o.dim, generator=g)
    direction /= direction.norm(dim=1, keepdim=True)
    with torch.no_grad():
        emb.weight.copy_(target + 0.05 * torch.randn(o.rows, o.dim, generator=g))
    opt = torch.optim.SGD(emb.parameters(), lr=0.5)
    tracker = gradscope.EmbeddingTracker(emb, name="item", zombie_rule=o.rule)
    seen = torch.zeros(o.rows, dtype=torch.long)
    planted_t = torch.from_numpy(is_planted)
    law = torch.from_numpy(p)
    start = time.time()
    for _ in range(o.steps):
        rows = torch.unique(torch.multinomial(law, o.batch, replacement=True, generator=g))
        seen[rows] += 1
        sign = (seen[rows] % 2 * 2 - 1).float()
        goal = target[rows] + o.noise * torch.randn(len(rows), o.dim, generator=g)
        flip = planted_t[rows]
        goal[flip] += o.strength * sign[flip, None] * direction[rows][flip]
        opt.zero_grad()
        (0.5 * ((emb(rows) - goal) ** 2).sum()).backward()
        tracker.step(opt)
    report = tracker.report()
    tracker.close()
    zombies = [d for d in report["diagnostics"] if d["type"] == "ZOMBIE_ROWS"]
    flagged = set(zombies[0]["evidence"].get("rows", [])) if zombies else set()
    updates = seen.numpy()
    hits = sum(1 for r in flagged if is_planted[r])
    stats = report["embedding_stats"]
    print(json.dumps({
        "rule": o.rule, "rows": o.rows, "steps": o.steps, "seconds": round(time.time() - start, 1),
        "planted": int(len(planted)),
        "planted_with_5_updates": int((updates[planted] >= 5).sum()),
        "planted_with_33_updates": int((updates[planted] >= 33).sum()),
        "flagged": len(flagged), "flagged_planted": hits,
        "recall": round(hits / max(1, len(planted)), 4),
        "precision": round(hits / len(flagged), 4) if flagged else None,
        "confidence": zombies[0]["confidence"] if zombies else None,
        "rows_judged": stats["zombie_rows_judged"],
        "rows_judged_short": stats.get("zombie_rows_judged_short"),
        "rows_not_judged": stats["zombie_rows_unjudged"]}))


if __name__ == "__main__":
    main()
