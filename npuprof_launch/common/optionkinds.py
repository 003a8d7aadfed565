"""How the text of an option's value is read, for each kind of option of the table (options.py).

Each parser takes the option (for its choices) and the text, and returns the value or raises
ValueError with the words the user reads after the flag or variable's name. Standard library only:
the hook reads options in every process of a job.
"""

from __future__ import annotations

BOOL_TRUE = ("1", "true", "yes", "on")
BOOL_FALSE = ("0", "false", "no", "off")
#: The least value of each kind of whole number (its parser's bound).
MINIMUMS = {"count": 0, "positive": 1}


def _int_at_least(minimum: int):
    def parse(option, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"expected a whole number >= {minimum}") from None
        if value < minimum:
            raise ValueError(f"expected a whole number >= {minimum}")
        return value

    return parse


def _parse_bool(option, raw: str) -> bool:
    low = raw.lower()
    if low in BOOL_TRUE:
        return True
    if low in BOOL_FALSE:
        return False
    raise ValueError("expected one of " + "/".join(BOOL_TRUE + BOOL_FALSE))


def _parse_choice(option, raw: str) -> str:
    if raw in option.choices:
        return raw
    low = raw.lower()
    for choice in option.choices:
        if choice.lower() == low:
            return choice
    raise ValueError("expected one of " + ", ".join(option.choices))


def _parse_choice_list(option, raw: str) -> tuple[str, ...]:
    items = [item.strip().lower() for item in raw.split(",") if item.strip()]
    if not items:
        raise ValueError("expected a comma-separated list of " + ", ".join(option.choices))
    bad = [item for item in items if item not in option.choices]
    if bad:
        raise ValueError(f"unknown {bad[0]!r}; expected a comma-separated list of " + ", ".join(option.choices))
    return tuple(dict.fromkeys(items))


def parse_ranks(raw: str) -> tuple[int, ...]:
    """``0,4-7`` -> (0, 4, 5, 6, 7). Raises ValueError on anything else."""
    ranks: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError("expected ranks like 0,4-7 (whole numbers and ascending ranges)")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ValueError(f"range {part!r} runs backwards; expected ranks like 0,4-7")
        ranks.extend(range(first, last + 1))
    return tuple(sorted(set(ranks)))


def _parse_ranks(option, raw: str) -> tuple[int, ...]:
    return parse_ranks(raw)


def _parse_target(option, raw: str) -> str:
    module, colon, qualname = raw.partition(":")
    if not colon or not module or not qualname or any(not p.isidentifier() for p in qualname.split(".")):
        raise ValueError("expected MODULE:QUALNAME, e.g. mypkg.engine:Engine.step or __main__:train_step")
    if any(not p.isidentifier() for p in module.split(".")):
        raise ValueError("expected MODULE:QUALNAME with a dotted module name")
    return raw


def _parse_float(option, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number >= 0") from None
    if not value >= 0:
        raise ValueError("expected a number >= 0")
    return value


def _parse_text(option, raw: str) -> str:
    if not raw:
        raise ValueError("expected a non-empty value")
    return raw


def format_ranks(ranks) -> str:
    return ",".join(str(r) for r in ranks)


#: The parser of each kind of option but ``stages`` (options.py adds it: a stage's values are
#: parsed as the options they name).
PARSERS = {
    "count": _int_at_least(MINIMUMS["count"]),
    "positive": _int_at_least(MINIMUMS["positive"]),
    "bool": _parse_bool,
    "choice": _parse_choice,
    "choices": _parse_choice_list,
    "ranks": _parse_ranks,
    "target": _parse_target,
    "float": _parse_float,
    "path": _parse_text,
}
