"""The demo's scenarios written in PyTorch (src/scenarios has them in LibTorch): the same
layers, names, data (sklearn digits, standardised), Adam lr 1e-3, batch 64 and audit policy."""
import collections
import csv

import torch
from torch import nn

import gradscope

NAN_STEP = 20  # src/scenarios/scenario_models.h kNaNStep


def load_digits(path, seed=7):
    rows = list(csv.reader(open(path)))
    x = torch.tensor([[float(v) for v in r[:64]] for r in rows]) / 16.0
    y = torch.tensor([int(float(r[64])) for r in rows])
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed))
    x, y = x[order], y[order]
    n_test = max(1, int(len(rows) * 0.2))
    train = x[: len(rows) - n_test]
    mean, std = train.mean(0), train.std(0)
    std[std == 0] = 1
    return (x[: len(rows) - n_test] - mean) / std, y[: len(rows) - n_test]


def seq(*layers):
    return nn.Sequential(collections.OrderedDict(layers))


def healthy_mlp():
    return seq(("fc1", nn.Linear(64, 64)), ("relu1", nn.ReLU()), ("fc2", nn.Linear(64, 32)),
               ("relu2", nn.ReLU()), ("out", nn.Linear(32, 10)))


def vanishing_trunk():
    layers = []
    for i in range(8):
        fc = nn.Linear(64, 64)
        with torch.no_grad():
            nn.init.normal_(fc.weight, 0.0, 0.01)
            nn.init.zeros_(fc.bias)
        layers += [(f"trunk{i}", fc), (f"sigmoid{i}", nn.Sigmoid())]
    return seq(*layers, ("out", nn.Linear(64, 10)))


def dying_relu():
    fc2 = nn.Linear(64, 64)
    with torch.no_grad():
        fc2.bias.fill_(-10.0)
    return seq(("fc1", nn.Linear(64, 64)), ("relu1", nn.ReLU()), ("fc2", fc2), ("relu2", nn.ReLU()),
               ("out", nn.Linear(64, 10)))


class Log(nn.Module):
    def forward(self, x):
        return x.log()


def nan_later():
    logfeat = nn.Linear(32, 16)
    with torch.no_grad():
        logfeat.bias.fill_(100.0)
    return seq(("fc1", nn.Linear(64, 32)), ("relu1", nn.ReLU()), ("logfeat", logfeat), ("log", Log()),
               ("out", nn.Linear(16, 10)))


class Image(nn.Module):
    def forward(self, x):
        return x.view(-1, 1, 8, 8)


def cnn_batchnorm():
    return seq(("image", Image()), ("conv1", nn.Conv2d(1, 8, 3, padding=1)), ("bn1", nn.BatchNorm2d(8)),
               ("relu1", nn.ReLU()), ("conv2", nn.Conv2d(8, 16, 3, padding=1)), ("bn2", nn.BatchNorm2d(16)),
               ("relu2", nn.ReLU()), ("pool", nn.MaxPool2d(2)), ("flat", nn.Flatten()),
               ("out", nn.Linear(16 * 4 * 4, 10)))


SCENARIOS = {"healthy-mlp": healthy_mlp, "vanishing-trunk": vanishing_trunk, "dying-relu": dying_relu,
             "nan-later": nan_later, "healthy-cnn": cnn_batchnorm}


def train(name, model, call, audit, opt, x, y, steps, generator=None):
    """The scenario loop: batches of 64 drawn without replacement (from `generator`, or torch's
    global one), cross-entropy through `call` (the model, or what compiles it), audit.step(opt);
    nan-later's bias planted at NAN_STEP. `audit` must be open."""
    order, cursor = torch.randperm(len(x), generator=generator), 0
    for step in range(steps):
        if cursor + 64 > len(x):
            order, cursor = torch.randperm(len(x), generator=generator), 0
        idx = order[cursor:cursor + 64]
        cursor += 64
        if name == "nan-later" and step == NAN_STEP:
            with torch.no_grad():
                model.logfeat.bias[0] = -1000.0
        opt.zero_grad()
        nn.functional.cross_entropy(call(x[idx]), y[idx]).backward()
        audit.step(opt)


def run(name, x, y, steps, seed=7, run_dir=None):
    """Trains scenario `name` under the scenario audit policy; returns the Audit (closed)."""
    torch.manual_seed(seed)
    model = SCENARIOS[name]()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    with gradscope.Audit(model, channels_all_nodes=gradscope.ChannelView(1, 5), run=run_dir,
                         overwrite=True) as audit:
        train(name, model, model, audit, opt, x, y, steps)
    return audit
