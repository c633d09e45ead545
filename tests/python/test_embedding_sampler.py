"""The declared negative sampler (NegativeSampler, Role.NEGATIVE): NEGATIVE_SAMPLER_SKEW fires on
a planted skewed sampler and not on one that draws as declared, and its numbers equal the C++
tracker's on the same lookups (cpp_reference sampler)."""
import json
import subprocess

import pytest
import torch
from torch import nn

import gradscope

ROWS, DIM, STEPS, BATCH = 200, 4, 20, 64


def lookups(negatives, seed=4):
    """Per step (positives, negatives): positives follow a Zipf law over rows; negatives are
    'uniform', 'popular' (the positives' law^0.75, as a popularity sampler) or 'skewed' (nine
    in ten from rows 0-9)."""
    g = torch.Generator().manual_seed(seed)
    zipf = 1.0 / torch.arange(1, ROWS + 1, dtype=torch.float64)
    steps = []
    for _ in range(STEPS):
        pos = torch.multinomial(zipf, BATCH, replacement=True, generator=g)
        if negatives == "uniform":
            neg = torch.randint(0, ROWS, (BATCH,), generator=g)
        elif negatives == "popular":
            neg = torch.multinomial(zipf.pow(0.75), BATCH, replacement=True, generator=g)
        else:
            few = torch.randint(0, 10, (BATCH,), generator=g)
            neg = torch.where(torch.rand(BATCH, generator=g) < 0.9, few, torch.randint(0, ROWS, (BATCH,), generator=g))
        steps.append((pos, neg))
    return steps


def python_report(steps, sampler):
    emb = nn.Embedding(ROWS, DIM)
    with gradscope.EmbeddingTracker(emb, name="item", negative_sampler=sampler) as tracker:
        for i, (pos, neg) in enumerate(steps):
            emb(pos)                                               # the hook: Role.LOOKUP
            if i % 2:
                tracker.observe(neg, role=gradscope.Role.NEGATIVE)
            else:
                with tracker.negatives():                          # the hook: Role.NEGATIVE
                    emb(neg)
            tracker.step(lambda: None)
    return tracker.report()


CASES = [("uniform", "skewed", True), ("uniform", "uniform", False), ("popularity", "popular", False),
         ("popularity", "uniform", True)]


@pytest.fixture(scope="module")
def cpp_reports(cpp_reference, tmp_path_factory):
    """{(kind, negatives): the C++ tracker's report}, one cpp_reference run per declared kind."""
    folder = tmp_path_factory.mktemp("lookups")
    reports = {}
    for kind in ("uniform", "popularity"):
        cases = [negatives for k, negatives, _ in CASES if k == kind]
        paths = []
        for negatives in cases:
            lines = [f"{ROWS} {DIM}"]
            for pos, neg in lookups(negatives):
                lines += ["L " + " ".join(map(str, pos.tolist())), "N " + " ".join(map(str, neg.tolist())), "S"]
            paths.append(folder / f"{kind}-{negatives}.txt")
            paths[-1].write_text("\n".join(lines) + "\n")
        out = subprocess.run([cpp_reference, "sampler", kind, *map(str, paths)], check=True, capture_output=True,
                             text=True).stdout.splitlines()
        for negatives, line in zip(cases, out, strict=True):
            reports[(kind, negatives)] = json.loads(line)["gradscope_embedding_report"]
    return reports


def skew(report):
    found = [d for d in report["diagnostics"] if d["type"] == "NEGATIVE_SAMPLER_SKEW"]
    return found[0] if found else None


@pytest.mark.parametrize("kind,negatives,fires", CASES)
def test_the_verdict_follows_the_declared_sampler_and_equals_the_cpp_one(cpp_reports, kind, negatives, fires):
    py = python_report(lookups(negatives), gradscope.NegativeSampler(kind))
    cpp = cpp_reports[(kind, negatives)]
    stats = py["embedding_stats"]
    assert (stats["lookups"], stats["negative_lookups"]) == (2 * STEPS * BATCH, STEPS * BATCH)
    assert (skew(py) is not None) == fires, (stats["sampler_tv"], stats["sampler_tv_chance"])
    assert skew(py) == skew(cpp)
    for key in ("lookups", "negative_lookups", "sampler_tv", "sampler_tv_chance", "exposed_rows", "lookup_gini"):
        assert stats[key] == cpp["embedding_stats"][key], key
    if fires:
        assert stats["sampler_tv"] - stats["sampler_tv_chance"] > 0.25
        assert skew(py)["confidence"] > 0


def test_planted_rows_are_the_examples_and_the_sampler_is_checked():
    report = python_report(lookups("skewed"), gradscope.NegativeSampler())
    assert set(skew(report)["evidence"]["example_rows"][:5]) <= set(range(10))
    s = gradscope.NegativeSampler("popularity", exponent=1.0)
    assert (s.kind, s.exponent) == ("popularity", 1.0) and repr(s) == "NegativeSampler('popularity', exponent=1.0)"
    assert gradscope.NegativeSampler().kind == "uniform"
    with pytest.raises(gradscope.Error, match="kind must be 'uniform' or 'popularity', got 'zipf'"):
        gradscope.NegativeSampler("zipf")
    emb = nn.Embedding(4, 2)
    with pytest.raises(gradscope.Error, match="embedding 'item': negative_sampler must be a gradscope.NegativeSampler"):
        gradscope.EmbeddingTracker(emb, name="item", negative_sampler="uniform")
    with gradscope.EmbeddingTracker(emb, name="item") as tracker:
        with pytest.raises(TypeError, match="role must be gradscope.Role.LOOKUP or gradscope.Role.NEGATIVE"):
            tracker.observe(torch.tensor([1]), role=True)
