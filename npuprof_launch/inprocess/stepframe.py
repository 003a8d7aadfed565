"""The optimizer step wrapper's frame, as the job sees it: torch's file, name and lines.

The clock's wrapper (stepwrapper._like_torch) takes the place of the one torch's
``Optimizer.profile_hook_step`` makes, so it is a frame of every optimizer step: in a traceback
from inside a step, in the location of a warning an optimizer's step raises to its caller
(``stacklevel=2``), in a stack the step looks at. Bare, that frame reads
``.../torch/optim/optimizer.py", line N, in wrapper`` and ``out = func(*args, **kwargs)``.

``dressed`` compiles _like_torch's source once more, each statement of the wrapper that is one of
torch's wrapper's (the call of the step, the hooks, the ``with`` of the range) placed at that
statement's line and columns in torch's file (so 3.11's carets under the call are the same too),
and the clock's own lines on torch's ``def wrapper`` line; the code is named as torch's and in
torch's file. Nothing else changes, and that is checked: the source compiled unchanged must be
the running _like_torch byte for byte, and the placed one the same code but for where its lines
are. Anything else (no source, another Python's code, another layout of torch's wrapper) keeps
the plain _like_torch: the frame is ours then, as before, and the step is the same.

Done once a process, when its first optimizer class is set up: about 10 ms on a busy 2-core
machine (two functions' sources parsed, ours compiled twice); nothing on the per-step path, whose
instructions are _like_torch's. Standard library only, as the hook's path requires.
"""

from __future__ import annotations

#: typing.TYPE_CHECKING without importing typing (hook.py says why); mypy takes it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: What ``dressed`` made: the factory, or None when it could not (tried once a process).
_made: list = []


def dressed(like_torch: Callable, torch_factory: Callable, torch_wrapper: Callable) -> Callable:
    """``like_torch`` (stepwrapper._like_torch), its wrapper's frame dressed as ``torch_wrapper``'s
    (the wrapper torch's ``torch_factory``, ``profile_hook_step``, made); ``like_torch`` itself
    where that cannot be done exactly. Raises nothing."""
    if not _made:
        try:
            code = torch_wrapper.__code__
            made = dress(like_torch, _lines(torch_factory), code.co_filename, getattr(code, "co_qualname", None))
        except Exception:  # noqa: BLE001 - any surprise: the plain wrapper
            made = None
        _made.append(made)
    return _made[0] or like_torch


def dress(like_torch: Callable, torch_source: tuple[list[str], int], torch_file: str, qualname: str | None):
    """``like_torch`` with its wrapper placed in ``torch_file`` where torch's ``profile_hook_step``
    (``torch_source``: its lines and the first one's number) has its wrapper; None where the result
    would not be the same code, or the source on disk is not the running ``like_torch``."""
    import __future__

    import types

    from npuprof_launch.inprocess import inplace

    ours = _parsed(*_lines(like_torch))
    theirs = _parsed(*torch_source)
    flags = __future__.annotations.compiler_flag
    compiled = compile(ours, like_torch.__code__.co_filename, "exec", flags=flags, dont_inherit=True)
    plain = _code_of(compiled, like_torch.__code__)
    if plain is None or not inplace._same_code(plain, like_torch.__code__):
        return None  # the source on disk is not the running code
    our_def, their_def = _inner_def(ours), _inner_def(theirs)
    if our_def is None or their_def is None:
        return None
    _place(our_def, their_def)
    _place_factory(ours.body[0], theirs.body[0], our_def)
    compiled = compile(ours, torch_file, "exec", flags=flags, dont_inherit=True)
    factory = _code_of(compiled, like_torch.__code__)
    if factory is None or not inplace._same_code(factory, like_torch.__code__, where=False):
        return None
    if qualname is not None:  # code has a qualified name from 3.11: torch's, as a traceback may show it
        consts = tuple(
            const.replace(co_qualname=qualname) if getattr(const, "co_name", None) == "wrapper" else const
            for const in factory.co_consts
        )
        factory = factory.replace(co_consts=consts)
    return types.FunctionType(factory, like_torch.__globals__, like_torch.__name__, like_torch.__defaults__)


def _lines(function) -> tuple[list[str], int]:
    """A function's source lines and the first one's number: from its first line (its first
    decorator's) to the last its own code runs (``return wrapper``, for both factories). Cheaper
    than ``inspect.getsourcelines``, which tokenizes the function to find its end."""
    import dis
    import linecache

    code = function.__code__
    last = max(line for _, line in dis.findlinestarts(code) if line is not None)
    lines = linecache.getlines(code.co_filename)[code.co_firstlineno - 1 : last]
    if not lines:
        raise OSError(f"no source for {code.co_filename}")
    return lines, code.co_firstlineno


def _parsed(lines: list[str], first: int):
    """The module tree of one function's source lines, at their lines and columns in their file."""
    import ast

    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse("".join(line[indent:] if line.strip() else "\n" for line in lines))
    shift = {"lineno": first - 1, "end_lineno": first - 1, "col_offset": indent, "end_col_offset": indent}
    for node in ast.walk(tree):
        if "lineno" in node._attributes and hasattr(node, "lineno"):
            for name, by in shift.items():
                setattr(node, name, getattr(node, name) + by)
    return tree


def _inner_def(tree):
    """The one ``def wrapper`` inside the factory's tree."""
    import ast

    found = [
        node
        for node in ast.walk(tree.body[0])
        if isinstance(node, ast.FunctionDef) and node is not tree.body[0] and node.name == "wrapper"
    ]
    return found[0] if len(found) == 1 else None


def _code_of(code, original):
    """The factory's code in the code of a module that holds it alone (by name: its first line is
    torch's once placed, and ``inplace._same_code`` compares the rest)."""
    found = [const for const in code.co_consts if getattr(const, "co_name", None) == original.co_name]
    return found[0] if len(found) == 1 else None


def _place(ours, theirs) -> None:
    """Give our wrapper's statements the positions of torch's that they are: the same statement
    (by its tree) anywhere in torch's wrapper, else the ``with`` and the ``for`` loops in order;
    the rest at torch's ``def`` line."""
    import ast

    _align(ours, theirs)  # the def and its decorator: a traceback through it names this line
    their_statements = [node for node in ast.walk(theirs) if isinstance(node, ast.stmt) and node is not theirs]
    by_tree: dict[str, ast.stmt] = {}
    for node in their_statements:
        key = _key(node)
        if key is not None:
            by_tree.setdefault(key, node)
    by_kind = {kind: [n for n in their_statements if isinstance(n, kind)] for kind in (ast.With, ast.For)}
    # The clock's lines take turns between torch's def line and its decorator's: two of them in a
    # row on one line would lose the NOP that marks the second (the code would not be the same).
    turns = [theirs, *theirs.decorator_list[:1]]
    placed = 0

    def place(statements) -> None:
        nonlocal placed
        for statement in statements:
            key = _key(statement)
            same = by_tree.get(key) if key is not None else None
            kind = type(statement) if type(statement) in by_kind else None
            if same is not None:
                _align(statement, same)
            elif kind is not None and by_kind[kind]:
                _align(statement, by_kind[kind].pop(0))
            else:
                _at(statement, turns[placed % len(turns)], deep=False)
                placed += 1
            for field in ("body", "orelse", "finalbody", "handlers"):
                place(getattr(statement, field, None) or ())

    place(ours.body)


def _key(statement) -> str | None:
    """A statement's tree as text, to be found in torch's wrapper; None for one that holds a block
    of the wrapper's (a ``with``, a loop, a ``try``): those are placed by kind, and their dumps,
    nested in one another, would cost more than all the rest."""
    import ast

    blocks = (ast.With, ast.For, ast.Try, ast.FunctionDef)
    if any(isinstance(node, blocks) for node in ast.walk(statement)):
        return None
    return ast.dump(statement)


def _place_factory(ours, theirs, our_def) -> None:
    """The factory's own lines (run once a class): its ``return wrapper`` on torch's, the rest on
    the line of torch's ``def profile_hook_step`` (not the wrapper's: 3.13 fuses a store and a load
    on one line into one instruction, and the code would not be the same)."""
    import ast

    returns = {ast.dump(node): node for node in theirs.body if isinstance(node, ast.Return)}
    _at(ours, theirs, deep=False)
    for statement in ours.body:
        if statement is our_def:
            continue
        same = returns.get(ast.dump(statement))
        if same is not None:
            _align(statement, same)
        else:
            _at(statement, theirs)


def _align(ours, theirs) -> None:
    """``ours`` at ``theirs``'s place: node by node where the trees agree, else its whole subtree
    where the part of torch's that stands in its place is. Statement bodies are left to ``_place``."""
    import ast

    if "lineno" in ours._attributes:
        for name in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            setattr(ours, name, getattr(theirs, name))
    for field, value in ast.iter_fields(ours):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        other = getattr(theirs, field, None)
        if isinstance(value, ast.AST):
            if isinstance(other, ast.AST) and type(other) is type(value):
                _align(value, other)
            else:
                _at(value, theirs)
        elif isinstance(value, list):
            others = other if isinstance(other, list) and len(other) == len(value) else [None] * len(value)
            for item, counterpart in zip(value, others):
                if not isinstance(item, ast.AST):
                    continue
                if type(counterpart) is type(item):
                    _align(item, counterpart)
                else:
                    _at(item, theirs)


def _at(node, place, deep: bool = True) -> None:
    """``node`` (and, ``deep``, its subtree but nested statements) where ``place`` begins."""
    import ast

    for each in ast.walk(node) if deep else [node, *_headers(node)]:
        if "lineno" in each._attributes:
            for name, value in (("lineno", place.lineno), ("end_lineno", place.lineno)):
                setattr(each, name, value)
            for name, value in (("col_offset", place.col_offset), ("end_col_offset", place.col_offset)):
                setattr(each, name, value)


def _headers(statement):
    """The nodes of a statement outside its nested statements (its test, its targets, ...)."""
    import ast

    for field, value in ast.iter_fields(statement):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield from ast.walk(item)
