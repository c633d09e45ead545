"""Lightning's DDP strategy on the CPU (Gloo, 2 processes) with GradscopeCallback: run by
test_lightning.py as `python lightning_ddp_script.py OUT_DIR`; Lightning starts the second rank
by running this script again. A ReLU layer planted dead (its bias -100) is named on the merged
run, which rank 0 alone writes; each rank writes what it saw to OUT_DIR/rank<N>.json."""
import json
import os
import sys

import torch
from torch import nn

import gradscope
import lightning.pytorch as pl
from gradscope.integrations.lightning import GradscopeCallback

BATCH, FEATURES, STEPS = 8, 6, 5


class Mlp(pl.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1))
        with torch.no_grad():
            self.net[0].bias.fill_(-100.0)  # every pre-activation negative: the ReLU is dead

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    out = sys.argv[1]
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH * 2 * STEPS, FEATURES, generator=g)
    data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)
    callback = GradscopeCallback(run=os.path.join(out, "run"), print_report=False)
    trainer = pl.Trainer(callbacks=[callback], accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                         enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
    trainer.fit(Mlp(), loader)
    report = callback.report
    counts = []
    if trainer.global_rank == 0:  # rank 0 wrote the run: the activation counts of every step
        run = gradscope.load_run(os.path.join(out, "run"), records=True)
        counts = [r.stats.count for r in run.records if r.node == "net/0" and r.site == "activation"]
    # A file a rank: the two processes share one stdout, where their lines can interleave.
    with open(os.path.join(out, f"rank{trainer.global_rank}.json"), "w") as f:
        json.dump({"rank": trainer.global_rank, "world": trainer.world_size, "steps": report.steps,
                   "global_step": trainer.global_step, "flags": report.flags(), "verdict": report.verdict(),
                   "activation_counts": counts}, f)


if __name__ == "__main__":
    main()
