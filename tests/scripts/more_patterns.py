"""More training patterns of real jobs, one per --mode; each prints its losses (exact) and a
checksum, and "iteration N" on stderr after each iteration (so a test can compare stderr too).

--mode ckpt      activation checkpointing (torch.utils.checkpoint, non-reentrant): backward runs
                 the forward of each checkpointed block again
--mode swa       torch.optim.swa_utils: AveragedModel updated and SWALR stepped after each
                 optimizer.step from --swa-start on, and update_bn at the end
--mode subproc   each iteration runs a child Python (subprocess.run, no training) for its data
--mode settrace  a sys.settrace line tracer over the job (this file's lines), as coverage.py's
                 Python tracer does with --source
--mode spawn     DDP on gloo, 2 ranks started by torch.multiprocessing.spawn (no torchrun)
--mode envrank   DDP on gloo from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set by a shell
                 loop, as DeepSpeed's and Slurm scripts do (no torchrun)

Run as a module too (``python -m more_patterns`` from this folder).
"""

import argparse
import hashlib
import os
import subprocess
import sys

import torch


def model_and_data(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return model, torch.randn(32, 8), torch.randn(32, 1)


def checksum(model) -> str:
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()[:16]


def train(args, rank=0, world=1):
    model, x, y = model_and_data()
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa_model = scheduler = None
    if args.mode == "swa":
        swa_model = torch.optim.swa_utils.AveragedModel(model)
        scheduler = torch.optim.swa_utils.SWALR(optimizer, swa_lr=0.01, anneal_epochs=2)
    for i in range(1, args.steps + 1):
        if args.mode == "subproc":
            child = subprocess.run(
                [sys.executable, "-c", f"print({i} * 7)"], capture_output=True, text=True, check=True
            )
            scale = float(child.stdout) / (7 * i)
        else:
            scale = 1.0
        if args.mode == "ckpt":
            hidden = torch.utils.checkpoint.checkpoint(model[:2], x * scale, use_reentrant=False)
            loss = torch.nn.functional.mse_loss(model[2](hidden), y)
        else:
            loss = torch.nn.functional.mse_loss(model(x * scale), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if swa_model is not None and i >= args.swa_start:
            swa_model.update_parameters(model)
            scheduler.step()
        print(f"rank {rank} loss {i} {loss.item():.10f}")
        print(f"iteration {i}", file=sys.stderr)
    if swa_model is not None:
        loader = [(x, y)]
        torch.optim.swa_utils.update_bn(loader, swa_model)
        print(f"swa checksum {checksum(swa_model.module)}")
    print(f"rank {rank} checksum {checksum(model)}")


def spawned(rank, args, world):
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        train(args, rank, world)
    finally:
        dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["ckpt", "swa", "subproc", "settrace", "spawn", "envrank"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--swa-start", type=int, default=3)
    parser.add_argument("--port", type=int, default=29531)
    args = parser.parse_args()
    if args.mode == "spawn":
        torch.multiprocessing.spawn(spawned, args=(args, 2), nprocs=2)
        return
    if args.mode == "envrank":
        import torch.distributed as dist

        dist.init_process_group("gloo")
        try:
            train(args, dist.get_rank(), dist.get_world_size())
        finally:
            dist.destroy_process_group()
        return
    if args.mode == "settrace":
        lines = [0]

        def tracer(frame, event, arg):  # this file's lines only, as coverage run --source does
            if frame.f_code.co_filename != __file__:
                return None
            if event == "line":
                lines[0] += 1
            return tracer

        sys.settrace(tracer)
        try:
            train(args)
        finally:
            sys.settrace(None)
        print(f"traced lines > 0: {lines[0] > 0}")
        return
    train(args)


if __name__ == "__main__":
    main()
