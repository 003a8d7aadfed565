#!/usr/bin/env bash
# An existing launch script, profiled by adding ONE line (the eval) and changing nothing else.
# The same as: npuprof-run --skip-first 2 --active 2 --output-dir npuprof_output -- python train.py
set -euo pipefail
cd "$(dirname "$0")"

eval "$(npuprof-run --print-env --skip-first 2 --active 2 --output-dir npuprof_output)"

python train.py --steps 12
