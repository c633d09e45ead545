"""Small models and a training loop shared by the Python tests."""
import collections

import torch
from torch import nn


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(collections.OrderedDict([
        ("fc1", nn.Linear(8, 16)), ("relu1", nn.ReLU()), ("fc2", nn.Linear(16, 16)), ("tanh", nn.Tanh()),
        ("out", nn.Linear(16, 3))]))


def batches(steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g)) for _ in range(steps)]


def train(model, data, audit=None, after_step=False, lr=1e-2):
    """Adam over `data`; with `audit`, audit.step(opt) or opt.step() + audit.after_step()."""
    opt = torch.optim.Adam(model.parameters(), lr)
    for x, y in data:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        if audit is None:
            opt.step()
        elif after_step:
            opt.step()
            audit.after_step()
        else:
            audit.step(opt)
    return model


def hooks_left(model):
    """Every forward/backward hook still on the model's modules and parameters."""
    left = []
    for name, m in model.named_modules():
        for kind in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
            if getattr(m, kind):
                left.append(f"{name or 'model'}.{kind}")
    for name, p in model.named_parameters():
        if p._backward_hooks:
            left.append(f"{name}._backward_hooks")
    return left
