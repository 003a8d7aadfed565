"""The stages of ``--scenario rl``: how they are written, on the command line and in the environment.

A stage is ``NAME=MOD:QUALNAME``, optionally followed by its own step selection as
``,KEY=VALUE`` pairs whose keys are the schedule options (``skip-first``, ``wait``, ``warmup``,
``active``, ``repeat``) and ``range``, parsed exactly as those options are (options.parse_stage)::

    --stage rollout=rl_lib:Actor.generate,skip-first=1,active=2 --stage update=rl_lib:Learner.update

The flag repeats; in ``NPU_PROF_STAGE`` the stages are joined with ``;`` (a character no module
path, qualname or number contains). NAME names the stage's output subdirectory ``OUT/NAME`` and
its label on the timeline, so it is kept to letters, digits, ``_`` and ``-``.

Only the syntax is here, standard library only and nothing of ours: the hook splits stages at
process start, before any option is resolved.
"""

from __future__ import annotations

from npuprof_launch.common import names

SEPARATOR = ";"
#: The options a stage may set for itself, as ``,KEY=VALUE``.
KEYS = (*names.SCHEDULE_KEYS, "range")
#: Names that would collide with the folders every output directory already has.
RESERVED = ("npuprof_status", "npuprof_requests")


def _is_name(name: str) -> bool:
    return name[:1].isalnum() and name.isascii() and all(c.isalnum() or c in "_-" for c in name)


def split_list(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(SEPARATOR) if part.strip()]


def split(text: str) -> tuple[str, str]:
    """``NAME=MOD:QUALNAME,...`` -> (NAME, MOD:QUALNAME), unchecked; raises nothing."""
    name, _, rest = text.partition("=")
    return name.strip(), rest.split(",", 1)[0].strip()


def with_selection(text: str, selection: list[tuple[str, str]]) -> str:
    """``text`` with its own step selection (every key but ``range``) replaced by ``selection``:
    the stage as a suggested next run declares it. Unchecked text is returned as it is."""
    try:
        name, target, pairs = parts(text)
    except ValueError:
        return text
    kept = [(key, value) for key, value in pairs if key == "range"]
    return ",".join([f"{name}={target}", *(f"{key}={value}" for key, value in [*selection, *kept])])


def parts(text: str) -> tuple[str, str, list[tuple[str, str]]]:
    """``NAME=MOD:QUALNAME,KEY=VALUE,...`` -> (NAME, MOD:QUALNAME, [(KEY, VALUE), ...]), the
    syntax checked; raises ValueError with a one-line reason. Values are left as text."""
    name, equals, rest = text.strip().partition("=")
    name = name.strip()
    if not equals or not _is_name(name) or name in RESERVED:
        raise ValueError(
            f"stage {text.strip()!r}: expected NAME=MOD:QUALNAME[,KEY=VALUE...] with NAME made of letters, digits, "
            "_ and - (it names the output subdirectory)"
        )
    target, *pairs = [part.strip() for part in rest.split(",")]
    found = []
    for pair in pairs:
        key, equals, value = pair.partition("=")
        key = key.strip()
        if not equals or key not in KEYS:
            raise ValueError(f"stage {name}: {pair!r}: expected KEY=VALUE with KEY one of {', '.join(KEYS)}")
        found.append((key, value))
    return name, target, found
