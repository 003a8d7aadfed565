"""A tiny PyTorch Lightning job, written as the Lightning docs show it; no npuprof code.

A LightningModule with automatic optimization (Lightning runs training_step inside
optimizer.step(closure) through its LightningOptimizer wrapper), an LR scheduler from
configure_optimizers, gradient accumulation over 2 batches. Logs, checkpoints and the
progress bar are off; the root directory is temporary. Prints the last loss, Lightning's own
count of optimizer steps and an exact checksum of the weights.

--profiler NAME   Lightning's own profiler ("simple", or "pytorch", which runs a torch.profiler of its own)
--devices N --strategy S   data-parallel on N CPU processes: "ddp" (Lightning starts the other
                  ranks as subprocesses, setting LOCAL_RANK and NODE_RANK but no RANK) or
                  "ddp_spawn" (torch.multiprocessing.spawn, which sets none); every rank prints
                  its own lines, prefixed with its global rank
--save PATH       save a checkpoint (trainer.save_checkpoint) after the last step
--resume PATH     resume from that checkpoint (trainer.fit(..., ckpt_path=PATH))
"""

import argparse
import os
import sys
import tempfile

import lightning as L
import torch
from jobkit import checksum


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        self.last_loss = None

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.last_loss = loss.detach()
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--profiler", choices=["simple", "pytorch"])
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--save")
    parser.add_argument("--resume")
    args = parser.parse_args()

    L.seed_everything(0, verbose=False)
    x = torch.randn(256, 16)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    model = Regressor()
    with tempfile.TemporaryDirectory() as scratch:
        trainer = L.Trainer(
            max_steps=args.steps,
            accumulate_grad_batches=2,
            accelerator="cpu",
            devices=args.devices,
            strategy=args.strategy,
            deterministic=True,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            profiler=args.profiler,
            default_root_dir=scratch,
        )
        trainer.fit(model, loader, ckpt_path=args.resume)
        if args.save:
            trainer.save_checkpoint(args.save)
    prefix = f"rank {trainer.global_rank} " if args.devices > 1 else ""
    lines = [f"{prefix}loss {model.last_loss.item()!r}"] if model.last_loss is not None else []
    lines += [f"{prefix}optimizer_steps {trainer.global_step}", f"{prefix}checksum {checksum(model)}"]
    # One write for all of this rank's lines: print's text and newline are two, and two ranks
    # printing at once can then splice a line of one into a line of the other.
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), ("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    main()
