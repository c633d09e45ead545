"""EmbeddingTracker over nn.Embedding: the C++ tracker's numbers on PyTorch's table."""
import pytest
import torch
from torch import nn

import gradscope


def test_exposure_lookups_and_gradient_norms_are_those_of_the_batches():
    torch.manual_seed(0)
    emb = nn.Embedding(50, 8)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    batches = [torch.tensor([1, 2, 3, 3]), torch.tensor([3, 7]), torch.tensor([9, 9, 9])]
    norms = []
    with gradscope.EmbeddingTracker(emb, name="item") as tracker:
        for ids in batches:
            opt.zero_grad()
            emb(ids).pow(2).sum().backward()
            norms.append(emb.weight.grad.norm().item())
            tracker.step(opt)
        assert tracker.touched_rows() == [9]
    assert emb._forward_hooks == {}
    stats = tracker.report()["embedding_stats"]
    assert tracker.report()["layer"] == "item"
    assert (stats["num_embeddings"], stats["dim"], stats["tracked_steps"]) == (50, 8, 3)
    assert stats["exposed_rows"] == 5 and stats["lookups"] == 9 and stats["never_exposed_rows"] == 45
    got = [n for _, n in tracker._engine.gradient_norms()]
    assert [round(a, 5) for a in got] == [round(b, 5) for b in norms]


def test_negatives_are_counted_as_negatives():
    emb = nn.Embedding(10, 4)
    tracker = gradscope.EmbeddingTracker(emb, name="item", track_every=1)
    emb(torch.tensor([1, 2]))
    with tracker.negatives():
        emb(torch.tensor([5, 6, 7]))
    emb.weight.sum().backward()
    tracker.step(lambda: None)
    stats = tracker.report()["embedding_stats"]
    assert stats["negative_lookups"] == 3 and stats["lookups"] == 5
    tracker.close()


def test_track_every_and_bad_indices():
    emb = nn.Embedding(10, 4)
    with gradscope.EmbeddingTracker(emb, name="user", track_every=2) as tracker:
        for _ in range(4):
            emb(torch.tensor([1])).sum().backward()
            tracker.step(lambda: None)
        assert [step for step, _ in tracker._engine.gradient_norms()] == [0, 2]  # tracked steps only
        assert any("2 steps were tracked" in w for w in tracker.warnings())
        try:
            emb.weight.grad = None
            tracker.observe(torch.tensor([12]))
        except gradscope.Error as e:
            assert "user" in str(e) and "12" in str(e)
        else:
            raise AssertionError("an index outside the table must be an Error")


def test_the_other_tracker_options_reach_the_cpp_tracker():
    emb = nn.Embedding(20, 4)
    with gradscope.EmbeddingTracker(emb, name="item", rank_sample_rows=3) as tracker:
        emb(torch.arange(10)).sum().backward()
        tracker.step(lambda: None)
    stats = tracker.report()["embedding_stats"]
    assert stats["exposed_rows"] == 10 and stats["effective_rank_rows"] == 3  # default: all 10
    with pytest.raises(gradscope.Error, match=r"embedding 'item': need 0 < fix_min_scale <= fix_max_scale"):
        gradscope.EmbeddingTracker(emb, name="item", fix_min_scale=0.5, fix_max_scale=0.2)
    with pytest.raises(TypeError, match="unexpected option 'rank_rows'"):
        gradscope.EmbeddingTracker(emb, name="item", rank_rows=3)
    hub = gradscope.EmbeddingHub()
    hub.track(emb, name="item", rank_sample_rows=2)
    emb(torch.arange(10)).sum().backward()
    hub.step(lambda: None)
    assert hub.report()["tables"][0]["embedding_stats"]["effective_rank_rows"] == 2
    hub.close()
    assert emb._forward_hooks == {}
