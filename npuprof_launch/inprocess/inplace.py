"""Counting a function's calls inside its own frame: no frame of ours in what the job sees.

A wrapper around a function is a frame between the caller and the function. A warning the
function raises with ``stacklevel=2`` then names the wrapper's file and line instead of the
caller's (Python's once-per-location rule and the job's warning filters see the tool), and every
traceback through the function holds a line of ours. So where it can, the tool counts a call from
inside the function's own code: ``count_in_place`` compiles the function's source again, its body
inside ``try``/``finally`` with one call of ours before the ``try`` and one in the ``finally``,
and gives the function that code (``function.__code__``: the function object, and every name
bound to it, stay the job's). Every line, column and name of the body is the original's, so a
warning, a traceback or a stack the job inspects reads as it does bare.

It is done only where the result is known to be the same code: the source is compiled once
unchanged, in the same context (its module's imports and ``__future__`` flags; the enclosing
functions and classes its ``__qualname__`` names, for its closure, ``super()`` and name
mangling), and must give exactly the function's code, byte for byte, constants, names, line and
exception tables: first the function's own lines with that context rebuilt around them (about
4 ms for torch's GradScaler.step), else the whole module (``thorough``; about 45 ms for torch's
grad_scaler.py on a busy machine, too much for every process that imports torch). Anything
else (no source, the file changed on disk, a decorator that rewrote the code, a generator or
coroutine, a lambda, a body that rebinds an argument we read) returns False, and the caller wraps
the function as before.

The two calls are constants of the new code (placeholders swapped for our callables after
compiling), so the job's globals and the function's closure are untouched. Each is kept out of
dynamo's reach (``_Outside``): once torch._dynamo is imported it runs through
``torch.compiler.disable``, so that a compiled region never compiles our code (traced, the clock's
calls would be compiled away, and the count with them): where dynamo traces the function into a
graph it breaks the graph at our call and runs it eagerly, as it did at the wrapper's.

Standard library only (ast and inspect, imported at the first use), as the hook's path requires.
"""

from __future__ import annotations

import sys

#: typing.TYPE_CHECKING without importing typing (hook.py says why); mypy takes it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: The placeholders compiled in, then swapped for the callables (each used once per code object).
_BEGIN = "npuprof: begin of a counted call"
_END = "npuprof: end of a counted call"
#: Code flags of functions whose call returns before the body runs (generators, coroutines).
_DEFERRED = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR


def count_in_place(
    function: object,
    begin: Callable[..., None],
    end: Callable[..., None],
    args: tuple[str, ...] = (),
    *,
    thorough: bool = True,
) -> bool:
    """Give ``function`` code that calls ``begin(*args)`` before its body and ``end(*args)`` after
    it (on return and on exception), ``args`` being names of its parameters. Returns whether it
    did; False leaves the function as it was. Raises nothing.

    The function's own lines are compiled first with its module's top-level imports and its
    nesting only (``_reduced``: a few milliseconds); where that is not its code byte for byte (an
    import under ``try``, say) and ``thorough``, its whole module is parsed (``_whole``: about
    45 ms for torch's grad_scaler.py on a busy machine), which a process's start cannot afford."""
    try:
        code = _counted_code(function, begin, end, args, thorough)
    except Exception:  # noqa: BLE001 - any surprise: the caller wraps instead
        return False
    if code is None:
        return False
    try:
        function.__code__ = code  # type: ignore[attr-defined]  # a plain function (checked in _counted_code)
    except (AttributeError, TypeError, ValueError):
        return False
    return True


class _Outside:
    """A counted call's begin or end, run outside dynamo: through ``torch.compiler.disable``, and
    this class's own frame skipped by dynamo (``skip_code``), from the moment torch._dynamo is
    imported (``_keep_out``; never imported by us: until the job imports it, no region is
    compiled, and the plain call is all there is). Both are made then, outside any compiled
    region: made at a first call from inside one, their own frames were compiled."""

    __slots__ = ("call", "run")

    def __init__(self, call: Callable[..., None]) -> None:
        self.call = call
        self.run = call

    def __call__(self, *args) -> None:
        self.run(*args)


#: Every begin and end made, for ``_keep_out`` once torch._dynamo is imported.
_made: list[_Outside] = []


def _outside(call: Callable[..., None]) -> _Outside:
    made = _Outside(call)
    _made.append(made)
    if len(_made) == 1:
        from npuprof_launch.inprocess import importwatch

        importwatch.finder().watch("torch._dynamo", _keep_out)  # at once where it is imported already
    elif "torch._dynamo" in sys.modules:
        _keep_out()
    return made


def _keep_out(_module: object = None) -> None:
    compiler = getattr(sys.modules.get("torch"), "compiler", None)
    disable = getattr(compiler, "disable", None)
    if disable is None:
        return
    skip_code = getattr(sys.modules.get("torch._dynamo.eval_frame"), "skip_code", None)
    if skip_code is not None:
        skip_code(_Outside.__call__.__code__)
    for made in _made:
        if made.run is made.call:
            made.run = disable(made.call)


def _counted_code(function, begin, end, args: tuple[str, ...], thorough: bool):
    import ast
    import inspect
    import types

    if not isinstance(function, types.FunctionType):
        return None
    original = function.__code__
    if original.co_flags & _DEFERRED or function.__name__ == "<lambda>":
        return None
    params = original.co_varnames[: original.co_argcount + original.co_kwonlyargcount]
    if any(name not in params for name in args):
        return None
    filename = inspect.getsourcefile(function)
    if not filename or filename != original.co_filename:
        return None
    counted = None
    for build in (_reduced, _whole) if thorough else (_reduced,):
        found = build(function, filename)
        if found is None:
            continue
        tree, node = found
        if not _same_code(_compiled(tree, filename, original), original):
            continue  # not the code that runs: the source on disk changed, or the context is not its
        if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in args for n in ast.walk(node)):
            return None  # ``end`` reads an argument the body rebinds
        _count_body(node, args)
        counted = _compiled(ast.fix_missing_locations(tree), filename, original)
        break
    if counted is None or counted.co_freevars != original.co_freevars:
        return None
    marks = (_BEGIN, _END)
    if sum(1 for c in counted.co_consts if c in marks) != 2 or any(c in marks for c in original.co_consts):
        return None
    first, last = _outside(begin), _outside(end)
    consts = tuple(first if c == _BEGIN else last if c == _END else c for c in counted.co_consts)
    return counted.replace(co_consts=consts)


def _whole(function, filename: str):
    """(the module's whole tree, the function's ``def`` in it), or None."""
    import ast
    import linecache

    source = "".join(linecache.getlines(filename, function.__globals__))
    tree = ast.parse(source, filename)
    node = _def_of(tree, function.__code__)
    return (tree, node) if node is not None else None


def _reduced(function, filename: str):
    """(a module of the function's module's top-level imports and the function's own lines, nested
    in the scopes its ``__qualname__`` names, the innermost ``def`` binding its free variables;
    the function's ``def`` in it), or None. The imports are there because they change how a call
    of an imported name's attribute compiles (3.11 on)."""
    import ast
    import inspect
    import linecache

    original = function.__code__
    scopes = _scopes(function.__qualname__)
    if scopes is None:
        return None
    lines, first = inspect.getsourcelines(function)
    text = "".join(lines)
    indented = text[:1].isspace()
    parsed = ast.parse(("if 1:\n" + text) if indented else text, filename)
    node = parsed.body[0].body[0] if indented else parsed.body[0]  # type: ignore[attr-defined]
    if not isinstance(node, ast.FunctionDef) or node.name != original.co_name:
        return None
    ast.increment_lineno(node, first - (2 if indented else 1))
    free = [name for name in original.co_freevars if name != "__class__"]
    inner: ast.stmt = node
    innermost = max((i for i, (kind, _) in enumerate(scopes) if kind == "def"), default=-1)
    if free and innermost < 0:
        return None
    for i in range(len(scopes) - 1, -1, -1):
        kind, name = scopes[i]
        body: list[ast.stmt] = []
        if i == innermost and free:
            stores: list[ast.expr] = [ast.Name(id=n, ctx=ast.Store()) for n in free]
            body.append(ast.Assign(targets=stores, value=ast.Constant(value=None), lineno=1))
        body.append(inner)
        if kind == "def":
            no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], defaults=[])
            inner = ast.FunctionDef(name=name, args=no_args, body=body, decorator_list=[], returns=None, lineno=1)
        else:
            inner = ast.ClassDef(name=name, bases=[], keywords=[], body=body, decorator_list=[], lineno=1)
    imports = ast.parse("".join(_top_level_imports(linecache.getlines(filename, function.__globals__))), filename)
    module = ast.Module(body=[*imports.body, inner], type_ignores=[])
    return ast.fix_missing_locations(module), node


def _top_level_imports(lines: list[str]) -> list[str]:
    """The lines of a module's top-level ``import`` and ``from`` statements, a parenthesized or
    continued one whole (a line scan, no parse: what it misses only makes ``_reduced`` fail)."""
    found: list[str] = []
    open_parens = 0
    continued = False
    for line in lines:
        if open_parens or continued or line.startswith(("import ", "from ")):
            found.append(line if line.endswith("\n") else line + "\n")
            code = line.split("#", 1)[0]
            open_parens = max(0, open_parens + code.count("(") - code.count(")"))
            continued = code.rstrip().endswith("\\")
    return found


def _scopes(qualname: str) -> list[tuple[str, str]] | None:
    """The enclosing scopes of a function, outermost first, from its ``__qualname__``:
    ``make.<locals>.Trainer.step`` -> [("def", "make"), ("class", "Trainer")]."""
    parts = qualname.split(".")[:-1]
    scopes: list[tuple[str, str]] = []
    for i, part in enumerate(parts):
        if part == "<locals>":
            continue
        if not part.isidentifier():
            return None
        local = i + 1 < len(parts) and parts[i + 1] == "<locals>"
        scopes.append(("def" if local else "class", part))
    return scopes


def _count_body(node, args: tuple[str, ...]) -> None:
    """``node``'s body as ``begin(*args); try: BODY finally: end(*args)``, at the body's first
    line (a docstring stays first: it is the code's first constant)."""
    import ast

    body = list(node.body)
    doc = body[:1] if _is_docstring(body[0]) else []
    rest = body[len(doc) :] or [ast.copy_location(ast.Pass(), body[-1])]
    at = rest[0]

    def call(mark: str):
        marked = ast.Attribute(value=ast.Constant(value=mark), attr="__call__", ctx=ast.Load())
        made = ast.Expr(value=ast.Call(func=marked, args=[ast.Name(id=a, ctx=ast.Load()) for a in args], keywords=[]))
        for each in ast.walk(made):
            ast.copy_location(each, at)
        return made

    guarded = ast.copy_location(ast.Try(body=rest, handlers=[], orelse=[], finalbody=[call(_END)]), at)
    node.body = [*doc, call(_BEGIN), guarded]


def _is_docstring(statement) -> bool:
    import ast

    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _def_of(tree, original):
    """The one ``def`` of the module's tree that compiled to ``original`` (its name, and its line or
    its first decorator's), or None."""
    import ast

    nodes = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name == original.co_name
        and original.co_firstlineno in (node.lineno, *(d.lineno for d in node.decorator_list[:1]))
    ]
    return nodes[0] if len(nodes) == 1 else None


def _compiled(tree, filename: str, original):
    """``original``'s code as ``tree`` compiles (with its ``__future__`` imports, its imports, the
    function's nesting, closure and name mangling); nothing runs."""
    return _find(compile(tree, filename, "exec", dont_inherit=True), original)


def _find(code, original):
    """The one code object nested anywhere in ``code`` that is ``original``'s function, by name,
    first line and qualified name (where the code has one)."""
    found, pending = [], [code]
    qualname = getattr(original, "co_qualname", None)
    while pending:
        for const in pending.pop().co_consts:
            if hasattr(const, "co_code"):
                pending.append(const)
                if (
                    const.co_name == original.co_name
                    and const.co_firstlineno == original.co_firstlineno
                    and getattr(const, "co_qualname", None) == qualname
                ):
                    found.append(const)
    return found[0] if len(found) == 1 else None


_COMPARED = (
    "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags", "co_argcount",
    "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_name", "co_qualname", "co_firstlineno",
    "co_filename", "co_exceptiontable",
)  # fmt: skip


#: What ``_same_code`` leaves out with ``where=False``: where the code's lines are, not what they do.
_WHERE = ("co_firstlineno", "co_filename", "co_qualname")


def _same_code(one, other, where: bool = True) -> bool:
    """Whether two code objects are the same code: every field above, and their constants (nested
    code compared the same way); ``where=False``, wherever their lines are (stepframe.py)."""
    compared = _COMPARED if where else [field for field in _COMPARED if field not in _WHERE]
    if any(getattr(one, field, None) != getattr(other, field, None) for field in compared):
        return False
    # The line table: co_linetable from 3.10; 3.9 has only co_lnotab (deprecated from 3.12, read
    # where there is no other: a warnings.catch_warnings here would reset the job's once-only warnings).
    table = "co_linetable" if hasattr(one, "co_linetable") else "co_lnotab"
    if where and getattr(one, table) != getattr(other, table):
        return False
    if len(one.co_consts) != len(other.co_consts):
        return False
    for a, b in zip(one.co_consts, other.co_consts):
        if hasattr(a, "co_code") or hasattr(b, "co_code"):
            if not (hasattr(a, "co_code") and hasattr(b, "co_code") and _same_code(a, b, where)):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True
