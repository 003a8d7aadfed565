"""The stages of ``--scenario rl``: how they are written, on the command line and in the environment.

A stage is ``NAME=MOD:QUALNAME``, optionally followed by its own step selection as
``,KEY=VALUE`` pairs whose keys are the schedule options (``skip-first``, ``wait``, ``warmup``,
``active``, ``repeat``) and ``range``, parsed exactly as those options are::

    --stage rollout=rl_lib:Actor.generate,skip-first=1,active=2 --stage update=rl_lib:Learner.update

The flag repeats; in ``NPU_PROF_STAGE`` the stages are joined with ``;`` (a character no module
path, qualname or number contains). NAME names the stage's output subdirectory ``OUT/NAME`` and
its label on the timeline, so it is kept to letters, digits, ``_`` and ``-``.

``split`` is standard library only and raises nothing, for the hook at process start; ``parse``
validates with the options table.
"""

from __future__ import annotations

SEPARATOR = ";"
#: The options a stage may set for itself, as ``,KEY=VALUE``.
KEYS = ("skip-first", "wait", "warmup", "active", "repeat", "range")
#: Names that would collide with the folders every output directory already has.
RESERVED = ("npuprof_status", "npuprof_requests")


class Stage:
    """One parsed stage (a plain class: ``typing`` would cost the hook 2 ms at process start)."""

    __slots__ = ("name", "target", "overrides")

    def __init__(self, name: str, target: str, overrides: dict) -> None:
        self.name = name
        self.target = target
        #: Option name -> parsed value, applied over the job's options for this stage only.
        self.overrides = overrides

    def text(self) -> str:
        """The normalized spelling, as exported to the job."""
        from npuprof_launch import options

        pairs = "".join(f",{key}={options.BY_NAME[key].format(value)}" for key, value in self.overrides.items())
        return f"{self.name}={self.target}{pairs}"


def _is_name(name: str) -> bool:
    return name[:1].isalnum() and name.isascii() and all(c.isalnum() or c in "_-" for c in name)


def split_list(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(SEPARATOR) if part.strip()]


def split(text: str) -> tuple[str, str]:
    """``NAME=MOD:QUALNAME,...`` -> (NAME, MOD:QUALNAME), unchecked."""
    name, _, rest = text.partition("=")
    return name.strip(), rest.split(",", 1)[0].strip()


def parse(text: str) -> Stage:
    """One stage, checked; raises ValueError with a one-line reason."""
    from npuprof_launch import options

    name, equals, rest = text.strip().partition("=")
    name = name.strip()
    if not equals or not _is_name(name) or name in RESERVED:
        raise ValueError(
            f"stage {text.strip()!r}: expected NAME=MOD:QUALNAME[,KEY=VALUE...] with NAME made of letters, digits, "
            "_ and - (it names the output subdirectory)"
        )
    target, *pairs = [part.strip() for part in rest.split(",")]
    target = options.BY_NAME["target"].parse(target, f"stage {name}")
    overrides: dict = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        key = key.strip()
        if not equals or key not in KEYS:
            raise ValueError(f"stage {name}: {pair!r}: expected KEY=VALUE with KEY one of {', '.join(KEYS)}")
        overrides[key] = options.BY_NAME[key].parse(value, f"stage {name} {key}")
    return Stage(name, target, overrides)


def parse_list(raw: str) -> tuple[str, ...]:
    """The value of ``--stage``/``NPU_PROF_STAGE``: normalized stage texts, names and functions unique."""
    stages = [parse(part) for part in split_list(raw)]
    if not stages:
        raise ValueError("expected NAME=MOD:QUALNAME[,KEY=VALUE...]; stages are separated by ';'")
    names: set[str] = set()
    targets: dict[str, str] = {}
    for stage in stages:
        if stage.name in names:
            raise ValueError(f"two stages are named {stage.name}")
        if stage.target in targets:
            raise ValueError(
                f"stages {targets[stage.target]} and {stage.name} both name {stage.target}; one function is one stage"
            )
        names.add(stage.name)
        targets[stage.target] = stage.name
    return tuple(stage.text() for stage in stages)
