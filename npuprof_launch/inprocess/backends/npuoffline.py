"""torch_npu's offline parse (``npuprof-run --analyse DIR``), run as a process of its own.

The launcher starts it (``python -m npuprof_launch.inprocess.backends.npuoffline``) rather than
importing torch_npu itself: the parse forks a pool, prints its progress and may fail in C; none of
that belongs in the launcher's process, and the launcher imports nothing of the job's wing. What
it found (the torch_npu version, or why torch_npu does not import) comes back in a small JSON
file; the parse's own messages go to the launcher's stderr as they are printed.
"""

from __future__ import annotations

import argparse
import sys

from npuprof_launch.common import files, names
from npuprof_launch.inprocess.backends import npu

#: The exit status when torch_npu does not import here (the result file says why).
NO_TORCH_NPU = 3


def analyse_offline(directory: str, export_types, note_warning) -> str:
    """Parse raw data in ``directory`` with torch_npu's offline ``analyse``; returns the torch_npu version.

    Raises ImportError when torch_npu cannot be imported here.
    """
    import torch_npu
    from torch_npu.profiler.profiler import analyse

    version = npu.installed_version(torch_npu)
    kwargs, notes = npu.analyse_call(directory, export_types, version, npu.capabilities(version, torch_npu.profiler))
    for note in notes:
        note_warning(note)
    analyse(**kwargs)
    return version


def main(argv: list[str] | None = None) -> int:
    """Parse, and say what came of it in ``--result``: ``{"version"}``, or ``{"import_error"}`` and NO_TORCH_NPU."""
    parser = argparse.ArgumentParser(prog="npuprof_launch.inprocess.backends.npuoffline")
    parser.add_argument("directory")
    parser.add_argument("--result", required=True)
    parser.add_argument("--export-type", default=None)
    args = parser.parse_args(argv)
    export_types = args.export_type.split(",") if args.export_type else None
    try:
        version = analyse_offline(args.directory, export_types, names.say)
    except ImportError as exc:
        files.write_json(args.result, {"import_error": str(exc)})
        return NO_TORCH_NPU
    files.write_json(args.result, {"version": version})
    return 0


if __name__ == "__main__":
    sys.exit(main())
