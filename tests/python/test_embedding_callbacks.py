"""EmbeddingTracker's callbacks, as in C++: on_step gets each tracked step's records (the touched
rows' gradient, then their real update), on_intervention each auto-fix act. An exception raised
in a callback reaches the caller of step(), unchanged."""
import pytest
import torch
from torch import nn

import gradscope


def test_on_step_gets_the_touched_rows_gradient_then_their_update():
    torch.manual_seed(1)
    emb = nn.Embedding(30, 4)
    opt = torch.optim.SGD(emb.parameters(), lr=0.3)
    seen, want = [], []
    with gradscope.EmbeddingTracker(emb, name="item", on_step=seen.extend) as tracker:
        for ids in (torch.tensor([1, 2, 2, 9]), torch.tensor([4]), torch.tensor([9, 20])):
            opt.zero_grad()
            emb(ids).pow(2).sum().backward()
            rows = torch.unique(ids)
            before = emb.weight.detach()[rows].double()
            grad = emb.weight.grad[rows].double()
            tracker.step(opt)
            want.append((len(rows) * 4, grad.pow(2).sum().item(), (emb.weight.detach()[rows].double() - before).sum().item()))
    assert [(r.step, r.node, r.site) for r in seen] == [
        (s, "item", site) for s in range(3) for site in ("embedding_rows", "update")]
    for (count, grad_sq, update_sum), g, u in zip(want, seen[0::2], seen[1::2]):
        assert g.stats.count == u.stats.count == count
        assert g.stats.sum_sq == pytest.approx(grad_sq, rel=1e-12)
        assert u.stats.sum == pytest.approx(update_sum, rel=1e-6)


def zombie_training(tracker, emb, steps=8):
    """Row 0 overshoots its minimum at every step (lr 0.95 on w^2): its updates alternate."""
    opt = torch.optim.SGD(emb.parameters(), lr=0.95)
    for _ in range(steps):
        opt.zero_grad()
        e = emb(torch.arange(8))
        (e[0].pow(2).sum() + 0 * e.sum()).backward()
        tracker.step(opt)


def test_on_intervention_gets_each_auto_fix_act():
    torch.manual_seed(0)
    emb = nn.Embedding(8, 4)
    acts = []
    tracker = gradscope.EmbeddingTracker(emb, auto_fix=True, zombie_rule="gradtracer", name="item",
                                         on_intervention=acts.append)
    zombie_training(tracker, emb)
    assert [(a.step, a.layer, a.type, a.rows_affected, a.sample_rows) for a in acts] == [
        (s, "item", "ZOMBIE_GRADIENT_SCALE", 1, [0]) for s in (5, 6, 7)]
    for a in acts:  # the MMSE gain snr / (1 + snr), within [fix_min_scale, fix_max_scale]
        assert a.scale_min == a.scale_mean == a.scale_max
        assert a.scale_min == pytest.approx(max(0.1, min(1.0, a.snr_median / (1 + a.snr_median))), rel=1e-9)
        assert a.time > 1.7e9
    tracker.close()


class Boom(Exception):
    pass


def raise_on(site):
    def callback(records):
        if records[0].site == site:
            raise Boom(f"raised at {site}")
    return callback


def step_that_raises(site):
    """A tracker whose on_step raises at `site` on rows 1 and 2: (table, optimizer, tracker,
    the weights before the step) once step() has raised."""
    emb = nn.Embedding(10, 4)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    tracker = gradscope.EmbeddingTracker(emb, on_step=raise_on(site))
    emb(torch.tensor([1, 2])).sum().backward()
    kept = emb.weight.detach().clone()
    with pytest.raises(Boom, match=f"raised at {site}"):
        tracker.step(opt)
    return emb, opt, tracker, kept


def test_an_exception_in_the_gradient_half_stops_the_step_before_the_update():
    emb, opt, tracker, kept = step_that_raises("embedding_rows")
    assert torch.equal(emb.weight, kept) and tracker.current_step == 0  # opt.step() did not run
    with pytest.raises(gradscope.Error, match="before_step\\(\\) called twice"):
        tracker.step(opt)
    tracker.after_step()  # closes the step that raised
    assert tracker.current_step == 1
    tracker.close()


def test_an_exception_in_the_update_half_finds_the_step_complete():
    emb, opt, tracker, kept = step_that_raises("update")
    assert not torch.equal(emb.weight, kept) and tracker.current_step == 1
    opt.zero_grad()  # the tracker goes on: the next step counts only its own lookups
    emb(torch.tensor([3])).sum().backward()
    with pytest.raises(Boom):
        tracker.step(opt)
    assert tracker.current_step == 2 and tracker.touched_rows() == [3]
    assert tracker.report()["embedding_stats"]["lookups"] == 3
    tracker.close()


def test_exceptions_from_on_intervention_and_through_a_hub_reach_the_caller():
    torch.manual_seed(0)
    emb = nn.Embedding(8, 4)

    def refuse(act):
        raise Boom(f"act at step {act.step}")
    tracker = gradscope.EmbeddingTracker(emb, auto_fix=True, zombie_rule="gradtracer", on_intervention=refuse)
    with pytest.raises(Boom, match="act at step 5"):
        zombie_training(tracker, emb)
    tracker.close()
    with gradscope.EmbeddingHub() as hub:
        hub.track(nn.Embedding(5, 2), name="user")
        items = nn.Embedding(6, 2)
        hub.track(items, name="item", on_step=raise_on("embedding_rows"))
        items(torch.tensor([0])).sum().backward()
        with pytest.raises(Boom):
            hub.step(lambda: None)


def test_callbacks_must_be_callable():
    emb = nn.Embedding(4, 2)
    with pytest.raises(gradscope.Error, match="embedding 'item': on_step must be callable, got int"):
        gradscope.EmbeddingTracker(emb, name="item", on_step=3)
    with pytest.raises(gradscope.Error, match="embedding 'u': on_intervention must be callable, got str"):
        gradscope.EmbeddingHub().track(emb, name="u", on_intervention="log")
