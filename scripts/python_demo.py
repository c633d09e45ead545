"""make demo's PyTorch model: a dying-ReLU MLP trained through `import gradscope`, its run saved
beside the C++ demo's runs, with its report and HTML page (gradscope html).

    PYTHONPATH=build/python /usr/bin/python3 scripts/python_demo.py DATA_DIR OUT_DIR GRADSCOPE_BIN
"""
import collections
import csv
import os
import subprocess
import sys

import torch
from torch import nn

import gradscope

STEPS = 200


def main(data_dir, out_dir, cli):
    rows = list(csv.reader(open(os.path.join(data_dir, "digits.csv"))))
    x = torch.tensor([[float(v) for v in r[:64]] for r in rows]) / 16.0
    y = torch.tensor([int(float(r[64])) for r in rows])
    x = (x - x.mean(0)) / x.std(0).clamp_min(1e-6)
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
    # report.{txt,json} and report.html from one source, the saved run (it holds the whole report).
    report = gradscope.load_run(run).report
    with open(os.path.join(run, "report.txt"), "w") as f:
        f.write(str(report))
    with open(os.path.join(run, "report.json"), "w") as f:
        f.write(report.to_json())
    subprocess.run([cli, "html", run, "-o", os.path.join(run, "report.html")], check=True)
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print("\n== python-dying-relu: PyTorch (import gradscope), fc2 with bias -10 before its ReLU\n")
    print(report)
    print("summary (PyTorch through the Python module)")
    print(f"  {'python-dying-relu':24s} accuracy {accuracy:.3f}  {report.verdict().strip()}")
    print(f"HTML report: {os.path.join(run, 'report.html')}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
