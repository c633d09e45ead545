"""make demo's PyTorch models, trained through `import gradscope`, their runs saved beside the
C++ demo's runs with their reports and HTML pages (gradscope html): a dying-ReLU MLP, a healthy
MLP trained with loss scaling as mixed precision does it, whose first steps overflow, an
embedding table with planted oscillating rows whose EmbeddingTracker writes its own run, and a
character-level GPT three ways (healthy; unstable: lr 3e-2 without warm-up; the same fixed with
qk-LayerNorm; examples/transformer_audit.py), and PyTorch's word-language-model LSTM recipe
without its gradient clipping (it blows up) beside the recipe as shipped (clip 0.25;
examples/lstm_audit.py).

    PYTHONPATH=build/python .venv/bin/python scripts/python_demo.py DATA_DIR OUT_DIR GRADSCOPE_BIN
"""
import collections
import csv
import os
import subprocess
import sys

import torch
from torch import nn

import gradscope

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import lstm_audit  # noqa: E402
import transformer_audit  # noqa: E402

STEPS = 200


def digits(data_dir):
    rows = list(csv.reader(open(os.path.join(data_dir, "digits.csv"))))
    x = torch.tensor([[float(v) for v in r[:64]] for r in rows]) / 16.0
    y = torch.tensor([int(float(r[64])) for r in rows])
    return (x - x.mean(0)) / x.std(0).clamp_min(1e-6), y


def report_output(cli, run, *flags):
    """What `gradscope report RUN [flags]` prints (exit 1 is an unhealthy run, not an error)."""
    out = subprocess.run([cli, "report", run, *flags], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"gradscope report {run} failed ({out.returncode}): {out.stderr}")
    return out.stdout


def save_reports(run, cli):
    """report.{txt,json} and report.html from one source, the saved run (it holds the whole
    report): report.txt and report.json are what `gradscope report RUN [--json]` prints."""
    text = report_output(cli, run)
    with open(os.path.join(run, "report.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(run, "report.json"), "w") as f:
        f.write(report_output(cli, run, "--json"))
    subprocess.run([cli, "html", run, "-o", os.path.join(run, "report.html")], check=True)
    return text


def main(data_dir, out_dir, cli):
    dying_relu(data_dir, out_dir, cli)
    loss_scale(data_dir, out_dir, cli)
    embedding(data_dir, out_dir, cli)
    transformers(out_dir, cli)
    blowups(out_dir, cli)


def blowups(out_dir, cli):
    """The LSTM of examples/lstm_lm.py at lr 20 without clipping, and its clipped twin."""
    lines = []
    for name, steps, what in (("blowup", 40, "lr 20, no clipping"), ("clipped", 200, "lr 20, clip 0.25")):
        run = os.path.join(out_dir, f"demo-python-lstm-{name}")
        truth, _ = lstm_audit.audited(name, 0, steps=steps, run=run, run_name=f"demo-python-lstm-{name}")
        save_reports(run, cli)
        report = gradscope.load_run(run).report
        lines.append(f"  {'python-lstm-' + name:24s} loss {truth['loss'][-1]:.2f}  ({what})  {report.verdict().strip()}")
        if name == "blowup":
            print("\n== python-lstm-blowup: PyTorch's word-language-model LSTM at lr 20 without its gradient "
                  "clipping; the loss blows up\n")
            print(report)
    # The blow-up's page draws its clipped twin's loss beside it.
    page = os.path.join(out_dir, "demo-python-lstm-blowup", "report.html")
    subprocess.run([cli, "html", os.path.join(out_dir, "demo-python-lstm-blowup"), "--beside",
                    os.path.join(out_dir, "demo-python-lstm-clipped"), "-o", page], check=True,
                   stdout=subprocess.DEVNULL)
    print("summary (the loss handed to audit.step: spikes and blow-ups)")
    print("\n".join(lines))
    print(f"HTML report (the blow-up beside its clipped twin): {page}")


def transformers(out_dir, cli):
    """The GPT of examples/transformer_lm.py on the licence texts, healthy, unstable and fixed."""
    lines = []
    for name, what in (("healthy", "lr 1e-3, warm-up"), ("unstable", "lr 3e-2, no warm-up"),
                       ("qknorm", "the unstable run with qk-LayerNorm")):
        run = os.path.join(out_dir, f"demo-python-gpt-{name}")
        truth, _ = transformer_audit.audited(name, 0, run=run, run_name=f"demo-python-gpt-{name}")
        save_reports(run, cli)
        report = gradscope.load_run(run).report
        lines.append(f"  {'python-gpt-' + name:24s} loss {truth['loss'][-1]:.2f}  ({what})  {report.verdict().strip()}")
        if name == "unstable":
            print("\n== python-gpt-unstable: a character-level GPT at lr 3e-2 without warm-up; its attention "
                  "logits grow and collapse\n")
            print(report)
    print("summary (a transformer through the Python module, attention measured every 10th step)")
    print("\n".join(lines))
    print(f"HTML report: {os.path.join(out_dir, 'demo-python-gpt-unstable', 'report.html')}")


def dying_relu(data_dir, out_dir, cli):
    x, y = digits(data_dir)
    torch.manual_seed(7)
    fc2 = nn.Linear(64, 64)
    with torch.no_grad():
        fc2.bias.fill_(-10.0)  # planted: fc2's ReLU never fires
    model = nn.Sequential(collections.OrderedDict([
        ("fc1", nn.Linear(64, 64)), ("relu1", nn.ReLU()), ("fc2", fc2), ("relu2", nn.ReLU()),
        ("out", nn.Linear(64, 10))]))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    run = os.path.join(out_dir, "demo-python-dying-relu")
    with gradscope.Audit(model, run=run, run_name="demo-python-dying-relu", overwrite=True) as audit:
        for step in range(STEPS):
            idx = torch.randint(0, len(x), (64,))
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            audit.step(opt)
    save_reports(run, cli)
    report = gradscope.load_run(run).report
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print("\n== python-dying-relu: PyTorch (import gradscope), fc2 with bias -10 before its ReLU\n")
    print(report)
    print("summary (PyTorch through the Python module)")
    print(f"  {'python-dying-relu':24s} accuracy {accuracy:.3f}  {report.verdict().strip()}")
    print(f"HTML report: {os.path.join(run, 'report.html')}")


def float16_gradient(t):
    """t, whose gradient is rounded through float16 in backward, as under autocast: a scaled
    gradient past 65504 becomes inf."""
    if t.requires_grad:  # not in the accuracy pass under no_grad
        t.register_hook(lambda g: g.half().float())
    return t


class Fp16Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(64, 64), nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        h = float16_gradient(torch.relu(self.fc1(x)))
        h = float16_gradient(torch.relu(self.fc2(h)))
        return float16_gradient(self.out(h))


def loss_scale(data_dir, out_dir, cli):
    """Loss scaling by hand, as GradScaler does it: multiply the loss by the scale; when a
    gradient is not finite, skip the optimizer step and halve the scale. The scale starts too
    high, so the first steps overflow; the audit (set_loss_scale) reports the gradients
    unscaled and the skipped steps as LOSS_SCALE_OVERFLOW, not as NaN of the model."""
    x, y = digits(data_dir)
    torch.manual_seed(7)
    model = Fp16Mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    run = os.path.join(out_dir, "demo-python-loss-scale")
    scale, skipped = 2.0 ** 24, []
    with gradscope.Audit(model, run=run, run_name="demo-python-loss-scale", overwrite=True) as audit:
        for step in range(STEPS):
            audit.set_loss_scale(scale)
            idx = torch.randint(0, len(x), (64,))
            opt.zero_grad()
            (nn.functional.cross_entropy(model(x[idx]), y[idx]) * scale).backward()
            finite = all(torch.isfinite(p.grad).all() for p in model.parameters())

            def update():
                for p in model.parameters():
                    p.grad.div_(scale)
                opt.step()
            audit.step(update if finite else (lambda: None))
            if not finite:
                skipped.append(step)
                scale /= 2
    save_reports(run, cli)
    report = gradscope.load_run(run).report
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print("\n== python-loss-scale: PyTorch, loss scaled from 2^24 with float16 gradients; "
          f"the scaler skipped steps {skipped}\n")
    print(report)
    print(f"  {'python-loss-scale':24s} accuracy {accuracy:.3f}  {report.verdict().strip()}")
    print(f"HTML report: {os.path.join(run, 'report.html')}")


def embedding(data_dir, out_dir, cli, steps=300, lr=0.1):
    """A factorisation of the digits: image rows (users) times pixel rows (items) predict which
    pixels of an image are above their mean. Planted: every 4th pixel row carries an L2 penalty
    with lr x 2 x l2 = 2, so each step sends it to the mirror of where it was: its updates flip
    direction step after step (true zombie rows). The tracker writes its own run; `gradscope
    report` reads the findings from it. The flips are measured here with plain PyTorch too."""
    x, _ = digits(data_dir)
    target = (x > 0).float()
    torch.manual_seed(7)
    users, items = nn.Embedding(len(x), 16), nn.Embedding(64, 16)
    planted = torch.arange(0, 64, 4)
    l2 = 1.0 / lr
    opt = torch.optim.SGD([users.weight, items.weight], lr=lr)
    run = os.path.join(out_dir, "demo-python-embedding")
    cosines, previous = [], None
    with gradscope.EmbeddingTracker(items, name="item", run=run, run_name="demo-python-embedding",
                                    overwrite=True) as tracker:
        for _ in range(steps):
            u = torch.randint(0, len(x), (64,))
            opt.zero_grad()
            logits = users(u) @ items(torch.arange(64)).t()
            loss = nn.functional.binary_cross_entropy_with_logits(logits, target[u])
            (loss + l2 * items(planted).pow(2).sum()).backward()
            before = items.weight.detach().clone()
            tracker.step(opt)
            update = items.weight.detach() - before
            if previous is not None:
                cosines.append(nn.functional.cosine_similarity(update, previous, dim=1))
            previous = update
    mean_cosine = torch.stack(cosines).mean(0)
    is_planted = torch.zeros(64, dtype=torch.bool)
    is_planted[planted] = True
    # The reports as `gradscope report` gives them: the run holds the table's findings.
    text = save_reports(run, cli)
    print("\n== python-embedding: PyTorch EmbeddingTracker(run=...), every 4th pixel row planted to "
          "flip each step (lr x 2 x l2 = 2)\n")
    print(text)
    print(f"   evidence (plain PyTorch): mean cosine between consecutive updates: planted rows "
          f"{mean_cosine[is_planted].mean().item():.2f}, the other {int((~is_planted).sum())} rows "
          f"{mean_cosine[~is_planted].mean().item():.2f}")
    verdict = [line for line in text.splitlines() if line.startswith("verdict:")]
    print(f"  {'python-embedding':24s} {verdict[0] if verdict else ''}")
    print(f"HTML report: {os.path.join(run, 'report.html')}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
