"""An inference loop with no optimizer: each call of ``Engine.step`` generates one token per sequence.

Profile steps 3 to 7 without changing a line, naming the step function with ``--target``:

    npuprof-run --scenario infer --target infer_lib:Engine.step --skip-first 2 --active 5 -- python examples/infer.py

It prints the generated tokens and a checksum, so that runs with and without the profiler can be
compared to the last bit.
"""

import argparse
import hashlib

from infer_lib import Engine


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    engine = Engine()
    for _ in range(args.steps):
        engine.step()
    print("tokens", engine.tokens[0].tolist())
    print("checksum", hashlib.sha256(repr(engine.tokens.tolist()).encode()).hexdigest())


if __name__ == "__main__":
    main()
