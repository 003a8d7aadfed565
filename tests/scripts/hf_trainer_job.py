"""A tiny Hugging Face Trainer job, written as the transformers docs show it; no npuprof code.

A BERT classifier built from a small config (no download), a synthetic dataset, gradient
accumulation over 2 micro-batches, the Trainer's default AdamW and linear LR schedule.
Everything the Trainer writes goes to a temporary directory. Prints the final training loss,
the Trainer's own count of optimizer steps and an exact checksum of the weights.

--compile   TrainingArguments(torch_compile=True) with the "eager" backend (no C++ compiler needed)
--checkpoints DIR   the Trainer writes there instead, and saves a checkpoint after its last step
--resume    resume from the latest checkpoint in --checkpoints (``resume_from_checkpoint=True``)
"""

import argparse
import tempfile

import torch
from jobkit import checksum
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed


class Synthetic(torch.utils.data.Dataset):
    def __init__(self, size: int, vocab: int, length: int) -> None:
        generator = torch.Generator().manual_seed(1)
        self.input_ids = torch.randint(0, vocab, (size, length), generator=generator)
        self.labels = (self.input_ids.sum(dim=1) % 2).tolist()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.input_ids[index], "labels": self.labels[index]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--checkpoints")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    set_seed(0)
    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as scratch:
        training_args = TrainingArguments(
            output_dir=args.checkpoints or scratch,
            max_steps=args.steps,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=2,
            learning_rate=1e-3,
            seed=0,
            use_cpu=True,
            report_to="none",
            logging_strategy="no",
            save_strategy="steps" if args.checkpoints else "no",
            save_steps=args.steps,
            disable_tqdm=True,
            torch_compile=args.compile,
            torch_compile_backend="eager" if args.compile else None,
        )
        trainer = Trainer(model=model, args=training_args, train_dataset=Synthetic(64, 64, 8))
        result = trainer.train(resume_from_checkpoint=True if args.resume else None)
    print(f"loss {result.training_loss!r}")
    print(f"optimizer_steps {trainer.state.global_step}")
    print(f"checksum {checksum(model)}")


if __name__ == "__main__":
    main()
