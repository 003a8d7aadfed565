#!/usr/bin/env bash
# An existing launch script, profiled by adding ONE line (the eval) and changing nothing else.
# The same as: npuprof-run --skip-first 2 --active 2 --output-dir npuprof_output -- python train.py
#
# Run it with the environment active (. .venv/bin/activate), so that npuprof-run and the python
# that has torch are found. An `eval "$(...)"` whose command is missing evaluates nothing and
# succeeds, so the job would run unprofiled as if all were well: say so and stop instead. (An
# option npuprof-run refuses stops the script by itself: what it prints for eval ends in exit 2.)
set -euo pipefail
cd "$(dirname "$0")"

command -v npuprof-run >/dev/null || {
    echo "env_export.sh: npuprof-run is not on PATH; activate the environment first: . .venv/bin/activate" >&2
    exit 127
}

eval "$(npuprof-run --print-env --skip-first 2 --active 2 --output-dir npuprof_output)"

python train.py --steps 12
