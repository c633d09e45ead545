"""EmbeddingHub: several tables stepped together by the C++ hub. Each table's report equals a
lone tracker's on the same training (its own options included); the cross-table finding is the
Pearson correlation of the tables' per-step gradient norms."""
import math

import pytest
import torch
from torch import nn

import gradscope


def towers():
    torch.manual_seed(3)
    return nn.Embedding(30, 4), nn.Embedding(40, 4)


def batches(steps):
    g = torch.Generator().manual_seed(5)
    return [(torch.randint(0, 30, (16,), generator=g), torch.randint(0, 40, (16,), generator=g),
             torch.randint(0, 40, (8,), generator=g)) for _ in range(steps)]


def train(users, items, data, step, negatives):
    opt = torch.optim.SGD(list(users.parameters()) + list(items.parameters()), lr=0.5)
    norms = []
    for u, i, neg in data:
        opt.zero_grad()
        with negatives():
            n = items(neg)
        loss = ((users(u) * items(i)).sum(1) - 1).pow(2).mean() + (users(u) * n[: len(u) // 2].repeat(2, 1)).sum(1).pow(2).mean()
        loss.backward()
        norms.append((users.weight.grad.norm().item(), items.weight.grad.norm().item()))
        step(opt)
    return norms


def pearson(x, y):
    x, y = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    x, y = x - x.mean(), y - y.mean()
    return (x @ y / (x.norm() * y.norm())).item()


# Options whose effect shows in the report: the windowed rule judges a row after two windows
# of `zombie_window` real updates (16 by default: no row of 20 steps; 2 here for the users),
# GradTracer's rule every exposed row (the items; a hub judging with default rules gave 0).
USER_THRESHOLDS = gradscope.Thresholds()
USER_THRESHOLDS.zombie_window = 2


def test_hub_tables_equal_lone_trackers_and_correlate_their_gradient_norms():
    data = batches(20)
    users, items = towers()
    with gradscope.EmbeddingHub() as hub:
        hub.track(users, name="user", thresholds=USER_THRESHOLDS)
        item_tracker = hub.track(items, name="item", zombie_rule="gradtracer")
        norms = train(users, items, data, hub.step, item_tracker.negatives)
        report = hub.report()
    assert users._forward_hooks == {} and items._forward_hooks == {}

    users2, items2 = towers()
    lone_user = gradscope.EmbeddingTracker(users2, name="user", thresholds=USER_THRESHOLDS)
    lone_item = gradscope.EmbeddingTracker(items2, name="item", zombie_rule="gradtracer")

    def step_both(opt):
        lone_user.before_step(), lone_item.before_step()
        opt.step()
        lone_user.after_step(), lone_item.after_step()

    train(users2, items2, data, step_both, lone_item.negatives)
    assert [t["layer"] for t in report["tables"]] == ["user", "item"]
    # each table judged with its own options, as the lone tracker judges it
    assert report["tables"][0] == lone_user.report()
    assert report["tables"][1] == lone_item.report()
    user_stats, item_stats = (t["embedding_stats"] for t in report["tables"])
    assert user_stats["zombie_rows_judged"] > 0
    assert item_stats["zombie_rows_judged"] == item_stats["exposed_rows"] > 0
    assert report["tables"][1]["embedding_stats"]["negative_lookups"] == 20 * 8
    assert hub["user"].report() == report["tables"][0]
    assert hub["item"].current_step == 20

    (corr,) = report["gradient_norm_correlations"]
    assert (corr["a"], corr["b"], corr["steps"]) == ("user", "item", 20)
    # the norms of the touched rows' gradient = the whole table's (other rows get none)
    assert corr["pearson"] == pytest.approx(pearson(*zip(*norms)), abs=1e-5)
    assert [round(n, 5) for _, n in hub["item"]._engine.gradient_norms()] == [round(n, 5) for _, n in norms]


def test_a_constant_series_has_no_correlation():
    users, items = nn.Embedding(5, 2), nn.Embedding(5, 2)
    hub = gradscope.EmbeddingHub()
    hub.track(users, name="user")
    hub.track(items, name="item")
    for _ in range(3):
        users(torch.tensor([1])).sum().backward()  # the same gradient norm every step
        (items(torch.tensor([2])) * torch.rand(1)).sum().backward()
        hub.step(lambda: None)
        users.weight.grad = None
        items.weight.grad = None
    (corr,) = hub.report()["gradient_norm_correlations"]
    assert corr["steps"] == 3 and (corr["pearson"] is None or math.isnan(corr["pearson"]))
    hub.close()


def test_hub_errors_name_the_table():
    users, items = towers()
    hub = gradscope.EmbeddingHub()
    user = hub.track(users, name="user")
    with pytest.raises(gradscope.Error, match="layer 'user' tracked twice"):
        hub.track(items, name="user")
    assert items._forward_hooks == {}  # the refused table got no hook
    with pytest.raises(gradscope.Error, match=r"no table 'usr' \(tables: \['user'\]\)"):
        hub["usr"]
    with pytest.raises(gradscope.Error, match=r"table 'user' is stepped by its hub: call hub.step"):
        user.step(lambda: None)
    with pytest.raises(gradscope.Error, match="embedding 'seq': module of type Linear is not an nn.Embedding"):
        hub.track(nn.Linear(2, 2), name="seq")
    with pytest.raises(gradscope.Error, match=r"embedding 'user'.*30"):
        user.observe(torch.tensor([30]))  # out of range, from the hub's tracker of the table
    hub.close()
    assert users._forward_hooks == {}
