"""The commands the tool suggests (``npuprof: next: ...``): found in what it printed, and read with
its own parser and checks. ``jobs.npuprof`` holds every launcher run to them, ``answers.check_json``
every report."""

from __future__ import annotations

import shlex

from npuprof_launch.common import names

#: How the summary prints a suggested next run.
SUGGESTED = f"{names.VOICE} next: "
EVAL = ('eval "$(', ')"')


def suggestions(text: str) -> list[str]:
    """The commands a summary suggests (``npuprof: next: ...``), whole: a job's argument that holds a
    newline (``python -c 'CODE'``) is quoted over several lines, as a shell reads it pasted."""
    found, lines = [], text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith(SUGGESTED):
            continue
        command = line[len(SUGGESTED) :]
        for more in lines[index + 1 :]:
            try:
                shlex.split(command)
                break
            except ValueError:  # a quotation still open: the argument goes on on the next line
                command += "\n" + more
        found.append(command)
    return found


def accepted(suggestion: str) -> tuple:
    """Read a suggested command with the tool's own parser and checks, as ``main`` would before it
    starts: ``npuprof-run OPTIONS -- COMMAND``, or the ``eval "$(npuprof-run --print-env ...)"``
    line of the variables' route. Returns (namespace, command, mode, config); fails the test with
    the tool's own words when the tool would refuse it (exit 2)."""
    from npuprof_launch.launcher import arguments

    text = suggestion
    if text.startswith(EVAL[0]) and text.endswith(EVAL[1]):
        text = text[len(EVAL[0]) : -len(EVAL[1])]
    argv = shlex.split(text)
    assert argv[0] == "npuprof-run", suggestion
    try:
        namespace, command, mode = arguments.parse(argv[1:])
        config = arguments.resolve_config(namespace, {})
    except (arguments.UsageError, SystemExit) as exc:
        raise AssertionError(f"the tool refuses the command it suggested: {suggestion}\n{exc}") from None
    assert (mode == "--print-env") if text is not suggestion else (mode is None and command), suggestion
    assert config.output_dir and namespace.output_dir, f"a suggestion without its run's --output-dir: {suggestion}"
    return namespace, command, mode, config
