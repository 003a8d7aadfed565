"""npuprof on torch 2.1 to 2.14, by contract: what the code uses, against what each release has.

Only one torch can be installed, so the releases are read instead (torch_sources.py): the checked-in
table ``torch_api.json`` says which releases have each torch API npuprof uses. Here:

* the table is current: complete, and what the sources give when they can be fetched;
* the table agrees with the torch that is installed, imported for real (the resolver's own check);
* a scanner reads npuprof's code with ``ast`` and collects every torch API it reaches: any use the
  table does not know fails, so the table cannot go stale silently, and neither can it keep
  entries nothing uses;
* a use of an API that a supported release lacks fails unless the code marks it as a fallback.

The scanner, in short. A *torch reference* is a name bound by ``import torch[.x] [as y]``,
``from torch[.x] import y``, ``importlib.import_module("torch...")``, ``sys.modules.get("torch...")``
or ``globals()["y"] = <torch reference>``; a parameter named ``torch`` or ``torch_module``; a
parameter a call in the same file passes a torch reference to (or the callback of
``watch("torch...", callback)``, the package's post-import hook); an assignment from a torch
reference (``x = torch.cuda``, ``x = getattr(torch, "cuda", None)``, ``x = a or b``); an attribute
``obj.attr = <torch reference>`` (then ``anything.attr`` in that file, as ``self._torch``); a class
with a torch base (then ``super()`` in it); what a local function returns; and what the few torch
calls in ``RETURNS`` return. A *use* is a lookup on a torch reference (``ref.name``,
``getattr(ref, "name"[, default])``, loads and stores alike), an import, a ``import_module`` call,
and each keyword of a call of a torch reference. Scoping follows Python's (a local shadows, a
``global`` does not), flow is ignored (a name is everything it is ever bound to in its scope).

A use is *guarded* (an explicit fallback) when it is a ``getattr`` with a default, when it runs in a
``try`` block whose handler catches AttributeError, ImportError or Exception (in the same
function), or when an enclosing ``if`` (or an earlier ``if ...: return`` in the same block, or the
test of an ``and``/conditional expression) checks ``hasattr`` of the same attribute on the same
reference. Which branch of the ``if`` is not looked at: the check says the code knows the
attribute may be missing.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import subprocess
import textwrap
from dataclasses import dataclass

import pytest
import torch_sources
from compare import profiled_against_bare
from jobs import PYTHON, ROOT, clean_env

PACKAGE = os.path.join(ROOT, "npuprof_launch")
#: Parameters that hold the torch module wherever they appear.
TORCH_PARAMETERS = {"torch", "torch_module"}
#: What a call of these torch APIs returns, for the uses made on the result.
RETURNS = {
    "torch.optim.optimizer.register_optimizer_step_pre_hook": "torch.utils.hooks.RemovableHandle",
    "torch.optim.optimizer.register_optimizer_step_post_hook": "torch.utils.hooks.RemovableHandle",
    "torch.nn.modules.module.register_module_forward_pre_hook": "torch.utils.hooks.RemovableHandle",
    "torch.autograd.profiler.record_function": "torch.autograd.profiler.record_function",
    "torch.profiler.profile": "torch.profiler.profile",
}
#: Attributes every class or function has: a chain is cut before them (``GradScaler.__init__``
#: uses ``GradScaler``). ``__enter__`` and ``__exit__`` are not among them.
GENERIC = {
    "__init__",
    "__init_subclass__",
    "__subclasses__",
    "__base__",
    "__bases__",
    "__mro__",
    "__name__",
    "__qualname__",
    "__doc__",
    "__module__",
    "__dict__",
    "__class__",
    "__func__",
    "__wrapped__",
    "__code__",
}
#: The attributes npuprof itself sets on torch's functions and classes (``_npuprof_counted``).
OWN_MARKS = "_npuprof"
#: Handlers that make a ``try`` a fallback for a missing attribute or module.
CATCHING = {"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass(frozen=True)
class Extra:
    """A use the scanner cannot see (the object is duck-typed or reached through ``vars()``)."""

    api: str
    where: str
    guarded: bool
    reason: str


#: Uses the scanner cannot resolve, each with why; they are checked like the ones it finds.
EXTRA_USES = (
    Extra("torch.profiler.profile.start", "session.py", False, "the session drives backend.build()'s profiler"),
    Extra("torch.profiler.profile.step", "session.py", False, "the session drives backend.build()'s profiler"),
    Extra("torch.profiler.profile.stop", "session.py", False, "the session drives backend.build()'s profiler"),
    Extra("torch.profiler.profile.export_chrome_trace", "backends/torch.py", False, "export(prof) gets that profiler"),
    Extra("torch.amp.grad_scaler.GradScaler.step", "optimizerclock.py", True, "read with vars(klass).get('step')"),
    Extra("torch.cuda.amp.grad_scaler.GradScaler.step", "optimizerclock.py", True, "read with vars(klass).get('step')"),
    Extra(
        "torch.optim.optimizer.Optimizer.profile_hook_step:staticmethod",
        "stepwrapper.py",
        True,
        "read with vars(Optimizer).get(), its __func__ taken, put back as a staticmethod; skipped if absent",
    ),
    Extra(
        "torch.optim.optimizer.Optimizer._patch_step_function",
        "stepwrapper.py",
        True,
        "not called: it is what calls the replaced profile_hook_step (without it, no safe point after a step)",
    ),
    Extra(
        "torch.optim.optimizer.Optimizer._patch_step_function[uses .profile_hook_step]",
        "stepwrapper.py",
        True,
        "torch must look profile_hook_step up on the class for the replacement to be called",
    ),
    Extra(
        "torch.optim.optimizer.Optimizer._patch_step_function[uses .hooked]",
        "stepwrapper.py",
        True,
        "torch marks a wrapped step hooked, so a class's step is wrapped (by the replacement) once",
    ),
)
#: Chains the scanner finds that are deliberately not in the table, with why (none today).
ALLOWED: dict[str, str] = {
    "torch.optim.Optimizer._patch_step_function": (
        "torch.optim.optimizer.Optimizer._patch_step_function, which the table holds (torch.optim re-exports the "
        "class); resumed.watch_loads reads it from the class's __dict__ and falls back where a release lacks it"
    ),
    "torch.distributed.rpc.api._is_current_rpc_agent_set": (
        "read with getattr from torch.distributed.rpc.api where the job imported it, called in a try "
        "(coexist.rpc_agent_running: a window beside an RPC agent is told); torch._C._distributed_rpc's, "
        "in libtorch_python of every release 2.1 to 2.14 the table reads"
    ),
    "torch.utils.data.get_worker_info": (
        "read with getattr and a default from torch.utils.data where the job imported it "
        "(processlog.log_idle: whether a multiprocessing child is a DataLoader's worker)"
    ),
    "torch.optim.Optimizer.get": (
        "the class's own __dict__.get (resumed.watch_loads: whether Optimizer itself defines load_state_dict)"
    ),
    "torch.optim.optimizer._global_optimizer_pre_hooks.values": "the values of the dict above: a dict's own method",
    "torch.optim.optimizer._global_optimizer_post_hooks.values": "the values of the dict above: a dict's own method",
    "torch.optim.optimizer._global_optimizer_pre_hooks.items": "the items of the dict above: a dict's own method",
    "torch._C._dynamo.eval_frame": (
        "dynamo's C eval-frame module, imported in a try that catches ImportError and AttributeError "
        "(optimizerclock._keep_out_of_graphs); the table's resolver cannot look inside torch._C's submodules"
    ),
    "torch._C._dynamo.eval_frame.get_eval_frame_callback": (
        "read in that same try: without it the step wrapper runs its copy of torch's wrapper, as before"
    ),
    "torch.optim.optimizer._global_optimizer_post_hooks.items": "the items of the dict above: a dict's own method",
    "torch.profiler.profile.step.co_varnames": (
        "the names of a function's locals (its code object's own field): whether step() names steps by "
        "the count before it, read from every release by test_the_step_counter_the_torch_backend_sets_is_the_releases"
    ),
}
#: APIs the code uses unguarded although a supported release lacks them: their test is expected to
#: fail until the code is fixed (strict, so the fix flips it). None today: the one thing a supported
#: release lacks, torch.amp.grad_scaler (before 2.3), is only reached through fallbacks.
KNOWN_GAPS: dict[str, str] = {}


@dataclass(frozen=True)
class Use:
    file: str
    line: int
    api: str
    guarded: bool

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.api}"


# -- the scanner ---------------------------------------------------------------------------------

_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _string(text: str) -> str:
    return "str:" + text


def _call_name(node: ast.AST) -> str | None:
    return torch_sources._dotted(node.func) if isinstance(node, ast.Call) else None


def _is_getattr(node: ast.AST) -> bool:
    return (
        _call_name(node) == "getattr"
        and len(node.args) in (2, 3)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


class _Scope:
    """One function (or the module, or a class body): its own names and what they are bound to."""

    def __init__(self, node: ast.AST, parent: _Scope | None) -> None:
        self.node = node
        self.parent = parent
        self.bindings: dict[str, set[str]] = {}
        self.locals, self.globals = self._names(node)
        self.defs: dict[str, ast.AST] = {}

    @staticmethod
    def _names(node: ast.AST) -> tuple[set[str], set[str]]:
        if isinstance(node, ast.Module):
            return set(), set()
        names, declared = set(), set()
        if isinstance(node, _FUNCTIONS):
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                names.add(arg.arg)
            for arg in (arguments.vararg, arguments.kwarg):
                if arg is not None:
                    names.add(arg.arg)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        stack = list(body)
        while stack:
            child = stack.pop()
            if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
                if not isinstance(child, ast.Lambda):
                    names.add(child.name)
                    stack.extend(child.decorator_list)
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in child.names)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                names.add(child.name)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                declared.update(child.names)
            stack.extend(ast.iter_child_nodes(child))
        return names - declared, declared

    def owner(self, name: str) -> _Scope:
        """The scope whose ``name`` this one sees (a class body is skipped by its methods)."""
        scope = self
        while scope.parent is not None:
            if name in scope.locals and (scope is self or not isinstance(scope.node, ast.ClassDef)):
                return scope
            scope = scope.parent
        return scope


class Scanner:
    """The torch uses of one file (see the module's docstring for the rules)."""

    def __init__(self, source: str, file: str) -> None:
        self.file = file
        self.tree = ast.parse(source)
        self.scopes: dict[int, _Scope] = {}
        self.attributes: dict[str, set[str]] = {}
        self.parameters: dict[tuple[int, str], set[str]] = {}
        self.returns: dict[int, set[str]] = {}
        self.methods: dict[str, list[ast.AST]] = {}
        self.classes: dict[int, set[str]] = {}
        self._build_scopes(self.tree, None)
        self.uses: list[Use] = []
        self._changed = True
        for _ in range(20):  # bindings only grow: a few passes reach the fixpoint
            if not self._changed:
                break
            self._changed = False
            self._walk(self.tree, self.scopes[id(self.tree)], _Guards(), record=False)
        self._walk(self.tree, self.scopes[id(self.tree)], _Guards(), record=True)

    # scopes and bindings

    def _build_scopes(self, node: ast.AST, parent: _Scope | None) -> None:
        scope = parent
        if isinstance(node, _SCOPES):
            scope = self.scopes[id(node)] = _Scope(node, parent)
            if parent is not None and not isinstance(node, ast.Lambda):
                parent.defs[node.name] = node
                if isinstance(parent.node, ast.ClassDef) and isinstance(node, _FUNCTIONS):
                    self.methods.setdefault(node.name, []).append(node)
        for child in ast.iter_child_nodes(node):
            self._build_scopes(child, scope)

    def _bind(self, scope: _Scope, name: str, values: set[str]) -> None:
        if not values:
            return
        owner = scope.owner(name) if name not in scope.globals else self.scopes[id(self.tree)]
        current = owner.bindings.setdefault(name, set())
        if not values <= current:
            current |= values
            self._changed = True

    def _add(self, table: dict, key, values: set[str]) -> None:
        if values and not values <= table.get(key, set()):
            table.setdefault(key, set()).update(values)
            self._changed = True

    def _lookup(self, scope: _Scope, name: str) -> set[str]:
        owner = scope.owner(name) if name not in scope.globals else self.scopes[id(self.tree)]
        values = set(owner.bindings.get(name, ()))
        if isinstance(owner.node, _FUNCTIONS) and name in TORCH_PARAMETERS:
            values.add("torch")
        return values | self.parameters.get((id(owner.node), name), set())

    def _function(self, scope: _Scope, node: ast.expr) -> tuple[ast.AST | None, bool]:
        """The local def a call's func names, and whether it is called as a method (``self.f``)."""
        if isinstance(node, ast.Name):
            owner = scope.owner(node.id)
            while owner is not None and node.id not in owner.defs:
                owner = owner.parent
            return (owner.defs[node.id] if owner is not None else None), False
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            found = self.methods.get(node.attr, [])
            return (found[0] if len(found) == 1 else None), True
        return None, False

    def resolve(self, node: ast.AST | None, scope: _Scope) -> set[str]:
        """The torch references (and ``str:`` constants) an expression may evaluate to."""
        if node is None:
            return set()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {_string(node.value)}
        if isinstance(node, ast.Name):
            values = self._lookup(scope, node.id)
            target, _ = self._function(scope, node)
            if isinstance(target, ast.ClassDef):
                values |= self.classes.get(id(target), set())
            return values
        if isinstance(node, ast.Attribute):
            base = self._objects(node.value, scope)
            if base:
                return {_cut(f"{value}.{node.attr}") for value in base}
            return set(self.attributes.get(node.attr, ()))
        if isinstance(node, (ast.BoolOp, ast.IfExp)):
            parts = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
            return set().union(*(self.resolve(part, scope) for part in parts))
        if isinstance(node, ast.Subscript) and torch_sources._dotted(node.value) == "sys.modules":
            return {s[4:] for s in self.resolve(node.slice, scope) if s.startswith("str:") and _is_torch(s[4:])}
        if isinstance(node, ast.Call):
            return self._call_result(node, scope)
        return set()

    def _objects(self, node: ast.AST, scope: _Scope) -> set[str]:
        """Torch references only (no strings): what an attribute can be looked up on."""
        if isinstance(node, ast.Call) and _call_name(node) == "super" and isinstance(scope.node, _FUNCTIONS):
            parent = scope.parent
            return set(self.classes.get(id(parent.node), ())) if parent is not None else set()
        return {value for value in self.resolve(node, scope) if not value.startswith("str:")}

    def _call_result(self, node: ast.Call, scope: _Scope) -> set[str]:
        name = _call_name(node)
        strings = {s[4:] for arg in node.args[:1] for s in self.resolve(arg, scope) if s.startswith("str:")}
        if name in ("importlib.import_module", "import_module", "sys.modules.get"):
            return {s for s in strings if _is_torch(s)}
        if _is_getattr(node):
            base = self._objects(node.args[0], scope)
            if base:
                return {_cut(f"{value}.{node.args[1].value}") for value in base}
            return set(self.attributes.get(node.args[1].value, ()))
        target, _ = self._function(scope, node.func)
        if target is not None and isinstance(target, _FUNCTIONS):
            return set(self.returns.get(id(target), ()))
        return {RETURNS[value] for value in self._objects(node.func, scope) if value in RETURNS}

    def _assign(self, target: ast.AST, value: ast.AST | None, values: set[str], scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, values)
        elif isinstance(target, ast.Attribute):
            self._add(self.attributes, target.attr, {v for v in values if not v.startswith("str:")})
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            for position, element in enumerate(target.elts):
                if items is not None and len(items) == len(target.elts):
                    self._assign(element, items[position], self.resolve(items[position], scope), scope)
        elif isinstance(target, ast.Subscript) and _call_name(target.value) == "globals":
            names = [s[4:] for s in self.resolve(target.slice, scope) if s.startswith("str:")]
            for name in names:
                self._bind(self.scopes[id(self.tree)], name, values)

    def _bind_call(self, node: ast.Call, scope: _Scope) -> None:
        """A call passes torch references to a local function's parameters, or a callback to watch()."""
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "watch" and len(node.args) == 2:
            modules = {s[4:] for s in self.resolve(node.args[0], scope) if s.startswith("str:") and _is_torch(s[4:])}
            target, method = self._function(scope, node.args[1])
            if modules and isinstance(target, _FUNCTIONS):
                parameters = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
                parameters = parameters[1:] if method else parameters
                if parameters:
                    self._add(self.parameters, (id(target), parameters[0]), modules)
        target, method = self._function(scope, node.func)
        if not isinstance(target, _FUNCTIONS):
            return
        parameters = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        if method:
            parameters = parameters[1:]
        for parameter, arg in zip(parameters, node.args):
            self._add(self.parameters, (id(target), parameter), self._objects(arg, scope))
        for keyword in node.keywords:
            if keyword.arg:
                self._add(self.parameters, (id(target), keyword.arg), self._objects(keyword.value, scope))

    # the walk

    def _walk(self, node: ast.AST, scope: _Scope, guards: _Guards, record: bool, as_object: bool = False) -> None:
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            self._walk_definition(node, scope, guards, record)
            return
        if isinstance(node, ast.Try):
            inner = guards.inside_try() if any(_catches(h.type) for h in node.handlers) else guards
            self._block(node.body, scope, inner, record)
            for block in (*(h.body for h in node.handlers), node.orelse, node.finalbody):
                self._block(block, scope, guards, record)
            for handler in node.handlers:
                if handler.type is not None:
                    self._walk(handler.type, scope, guards, record)
            return
        if isinstance(node, ast.If):
            self._walk(node.test, scope, guards, record)
            checked = guards.checking(self._hasattr_checks(node.test, scope))
            self._block(node.body, scope, checked, record)
            self._block(node.orelse, scope, checked, record)
            return
        if isinstance(node, (ast.BoolOp, ast.IfExp)):
            self._walk_conditional(node, scope, guards, record)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._walk_import(node, scope, guards, record)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if value is not None and not isinstance(node, ast.AugAssign):
                values = self.resolve(value, scope)
                for target in targets:
                    self._assign(target, value, values, scope)
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, (ast.Tuple, ast.List)):
            for item in node.iter.elts:
                self._assign(node.target, item, self.resolve(item, scope), scope)
        if isinstance(node, ast.Return) and isinstance(scope.node, _FUNCTIONS):
            self._add(self.returns, id(scope.node), self._objects(node.value, scope) if node.value else set())
        if isinstance(node, ast.Call):
            self._bind_call(node, scope)
            if record:
                self._record_call(node, scope, guards)
            if _call_name(node) == "hasattr":
                return  # a check, not a use
        if record and not as_object:
            self._record_lookup(node, scope, guards)
        for field, child in ast.iter_fields(node):
            children = child if isinstance(child, list) else [child]
            for item in children:
                if isinstance(item, ast.AST):
                    is_object = (isinstance(node, ast.Attribute) and field == "value") or (
                        _is_getattr(node) and item is node.args[0]
                    )
                    if isinstance(item, ast.stmt):
                        continue
                    self._walk(item, scope, guards, record, as_object=is_object)
        statements = [c for f, c in ast.iter_fields(node) if isinstance(c, list) and c and isinstance(c[0], ast.stmt)]
        for block in statements:
            self._block(block, scope, guards, record)

    def _block(self, statements: list[ast.stmt], scope: _Scope, guards: _Guards, record: bool) -> None:
        """Statements in order; an ``if <hasattr ...>: return`` guards those after it."""
        for statement in statements:
            self._walk(statement, scope, guards, record)
            if (
                isinstance(statement, ast.If)
                and not statement.orelse
                and isinstance(statement.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
            ):
                guards = guards.checking(self._hasattr_checks(statement.test, scope))

    def _walk_definition(self, node: ast.AST, scope: _Scope, guards: _Guards, record: bool) -> None:
        inner = self.scopes[id(node)]
        if isinstance(node, ast.ClassDef):
            for part in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
                self._walk(part, scope, guards, record)
            self._add(self.classes, id(node), set().union(*(self._objects(b, scope) for b in node.bases)))
            self._block(node.body, inner, guards, record)
            return
        arguments = node.args
        annotations = [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        parts = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None), *annotations]
        if not isinstance(node, ast.Lambda):
            parts += [*node.decorator_list, node.returns]
        for part in parts:
            if part is not None:
                self._walk(part, scope, guards, record)
        if isinstance(node, ast.Lambda):
            self._walk(node.body, inner, _Guards(), record)
        else:
            self._block(node.body, inner, _Guards(), record)  # a body runs later: the caller's try is not here

    def _walk_conditional(self, node: ast.AST, scope: _Scope, guards: _Guards, record: bool) -> None:
        if isinstance(node, ast.IfExp):
            self._walk(node.test, scope, guards, record)
            checked = guards.checking(self._hasattr_checks(node.test, scope))
            self._walk(node.body, scope, checked, record)
            self._walk(node.orelse, scope, checked, record)
            return
        for value in node.values:
            self._walk(value, scope, guards, record)
            guards = guards.checking(self._hasattr_checks(value, scope))

    def _walk_import(self, node: ast.AST, scope: _Scope, guards: _Guards, record: bool) -> None:
        """``import torch.x [as y]`` and ``from torch.x import y [as z]``: a binding and a use each."""
        for alias in node.names:
            if isinstance(node, ast.Import):
                used, bound = alias.name, alias.name if alias.asname else alias.name.split(".")[0]
            elif node.level == 0 and node.module:
                used = bound = f"{node.module}.{alias.name}"
            else:
                continue
            if _is_torch(used):
                self._bind(scope, (alias.asname or alias.name).split(".")[0], {bound})
                if record:
                    self._note(node, used, guards.guarded())

    def _record_call(self, node: ast.Call, scope: _Scope, guards: _Guards) -> None:
        name = _call_name(node)
        if name in ("importlib.import_module", "import_module"):
            for value in self.resolve(node.args[0], scope) if node.args else ():
                if value.startswith("str:") and _is_torch(value[4:]):
                    self._note(node, value[4:], guards.guarded())
            return
        if name in ("getattr", "hasattr", "sys.modules.get"):
            return
        for value in self._objects(node.func, scope):
            for keyword in node.keywords:
                if keyword.arg:
                    self._note(node, f"{value}({keyword.arg}=)", guards.guarded())

    def _record_lookup(self, node: ast.AST, scope: _Scope, guards: _Guards) -> None:
        if isinstance(node, ast.Attribute):
            objects, name, default = self._objects(node.value, scope), node.attr, False
        elif _is_getattr(node):
            objects, name, default = self._objects(node.args[0], scope), node.args[1].value, len(node.args) == 3
        else:
            return
        if name in GENERIC or name.startswith(OWN_MARKS):
            return  # on an object in hand: it has these, or they are npuprof's own marks
        for value in objects:
            chain = f"{value}.{name}"
            guarded = default or guards.guarded(chain)
            self._note(node, _cut(chain), guarded)

    def _note(self, node: ast.AST, api: str, guarded: bool) -> None:
        use = Use(self.file, node.lineno, api, guarded)
        if use not in self.uses:
            self.uses.append(use)

    def _hasattr_checks(self, test: ast.AST, scope: _Scope) -> set[str]:
        """``X.name`` for each ``hasattr(X, "name")`` in a test, ``all(hasattr(X, n) for n in (...))`` too."""
        checked = set()
        for node in ast.walk(test):
            if _call_name(node) == "hasattr" and len(node.args) == 2:
                objects = self._objects(node.args[0], scope)
                names = []
                if isinstance(node.args[1], ast.Constant):
                    names = [node.args[1].value]
                elif isinstance(node.args[1], ast.Name):
                    names = _loop_constants(test, node.args[1].id)
                checked |= {_cut(f"{value}.{name}") for value in objects for name in names}
        return checked


def _loop_constants(test: ast.AST, name: str) -> list[str]:
    """The string constants a comprehension in ``test`` binds ``name`` to (``for n in ("a", "b")``)."""
    found = []
    for node in ast.walk(test):
        if isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name) and node.target.id == name:
            if isinstance(node.iter, (ast.Tuple, ast.List)):
                found += [e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found


class _Guards:
    """What protects the code being walked: an enclosing ``try``, and the attributes checked with hasattr."""

    def __init__(self, in_try: bool = False, checked: frozenset = frozenset()) -> None:
        self.in_try = in_try
        self.checked = checked

    def inside_try(self) -> _Guards:
        return _Guards(True, self.checked)

    def checking(self, chains: set[str]) -> _Guards:
        return _Guards(self.in_try, self.checked | chains) if chains else self

    def guarded(self, chain: str | None = None) -> bool:
        return self.in_try or (chain is not None and _cut(chain) in self.checked)


def _catches(handler: ast.expr | None) -> bool:
    if handler is None:
        return True
    names = handler.elts if isinstance(handler, ast.Tuple) else [handler]
    return any(torch_sources._dotted(n) in CATCHING for n in names)


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


def _cut(chain: str) -> str:
    """The chain up to its first attribute every object has (``GradScaler.__init__`` -> ``GradScaler``)."""
    parts = chain.split(".")
    for position, part in enumerate(parts):
        if part in GENERIC:
            return ".".join(parts[:position])
    return chain


def package_files() -> list[str]:
    """Every module of the package, in every wing (sitecustomize.py touches no torch API)."""
    found = glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)
    return sorted(path for path in found if os.sep + "sitecustomize_pkg" + os.sep not in path)


def scan(source: str, file: str) -> list[Use]:
    return Scanner(source, file).uses


def package_uses() -> list[Use]:
    """Every torch use in npuprof's code, then the ones it cannot see (EXTRA_USES)."""
    uses = []
    for path in package_files():
        with open(path, encoding="utf-8") as stream:
            uses += scan(stream.read(), os.path.relpath(path, PACKAGE))
    return uses + [Use(extra.where, 0, extra.api, extra.guarded) for extra in EXTRA_USES]


def known(api: str, table: dict) -> bool:
    """In the table, or a namespace of something in it (``torch.cuda``), or allowed."""
    return api in table["apis"] or api in ALLOWED or any(key.startswith(api + ".") for key in table["apis"])


def gaps(uses: list[Use], table: dict) -> dict[str, list[str]]:
    """``{api: ["file:line (lacking in ...)", ...]}`` for each unguarded use of an API a release lacks."""
    found: dict[str, list[str]] = {}
    for use in uses:
        present = table["apis"].get(use.api)
        lacking = [version for version, has in (present or {}).items() if not has]
        if lacking and not use.guarded:
            found.setdefault(use.api, []).append(f"{use}: absent in torch {', '.join(lacking)}")
    return found


# -- the tests -----------------------------------------------------------------------------------

#: One worker runs this file: its session fixtures read the sources of every release (half a
#: minute of CPU), once per worker that runs one of its tests.
pytestmark = pytest.mark.xdist_group("torch_contract")

TABLE = torch_sources.load_table()
USES = package_uses()


@pytest.fixture(scope="session")
def releases() -> dict[str, torch_sources.ReleaseSource]:
    """Every release's sources, fetched once into the cache (a cold fetch: half a minute)."""
    try:
        return torch_sources.sources()
    except torch_sources.SourcesUnavailable as exc:
        pytest.skip(f"cannot fetch the torch sources (needs PyPI): {exc}")


def test_the_table_is_complete():
    assert TABLE["releases"] == list(torch_sources.RELEASES), "regenerate: tests/torch_sources.py --write-table"
    assert list(TABLE["apis"]) == list(torch_sources.APIS), "regenerate: tests/torch_sources.py --write-table"
    for api, present in TABLE["apis"].items():
        assert list(present) == TABLE["releases"], f"{api}: not every release is in the table"
        assert all(isinstance(value, bool) for value in present.values()), api


def test_the_table_is_what_the_sources_say(releases):
    regenerated = torch_sources.build_table(releases)
    assert torch_sources.dump(regenerated) == torch_sources.dump(TABLE), (
        "torch_api.json is stale: run python tests/torch_sources.py --write-table"
    )


#: Run in a subprocess: for each API of the table, whether the installed torch has it, looked up live.
LIVE = """
import collections, importlib, inspect, json, re, sys
import torch
#: Instance attributes exist on an instance only: one made here for each class that has them.
INSTANCES = {"torch.utils.hooks.RemovableHandle": lambda cls: cls(collections.OrderedDict())}

def find(dotted):
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:length]))
        except ImportError:
            continue
        path = ".".join(parts[:length])
        for part in parts[length:]:
            owner, obj = obj, getattr(obj, part, None)
            if obj is None and path in INSTANCES:
                obj = getattr(INSTANCES[path](owner), part, None)
            if obj is None:
                return None
            path += "." + part
        return obj
    return None

def has(api):
    fact = re.fullmatch(r"(.+)\\[uses \\.(\\w+)\\]", api)
    if fact:
        function = find(fact.group(1))
        return function is not None and fact.group(2) in function.__code__.co_names
    keyword = re.fullmatch(r"(.+)\\((\\w+)=\\)", api)
    if keyword:
        target = find(keyword.group(1))
        return target is not None and keyword.group(2) in inspect.signature(target).parameters
    if api.endswith(":staticmethod"):
        owner, name = api[: -len(":staticmethod")].rsplit(".", 1)
        cls = find(owner)
        return cls is not None and isinstance(inspect.getattr_static(cls, name, None), staticmethod)
    return find(api) is not None

print(json.dumps({"version": torch.__version__, "apis": {api: has(api) for api in json.loads(sys.argv[1])}}))
"""


#: APIs npuprof does not use, for the resolver to be checked on answers of both kinds (the table's
#: are all true on recent releases): present ones of each form, and absent ones.
PROBES = (
    "torch.profiler.profile(acc_events=)",
    "torch.profiler.schedule(skip_first_wait=)",
    "torch.profiler.profile(no_such_keyword=)",
    "torch.profiler.ProfilerActivity.XPU",
    "torch.profiler.ProfilerActivity.NO_SUCH_ACTIVITY",
    "torch.profiler.profile.add_metadata_json",
    "torch.profiler.profile.no_such_method",
    "torch.optim.optimizer.Optimizer.zero_grad",
    "torch.optim.optimizer.Optimizer.step:staticmethod",
    "torch.optim.optimizer.Optimizer.zero_grad[uses .hooked]",
    "torch.optim.optimizer.register_optimizer_no_such_hook",
    "torch.cuda.amp.grad_scaler.GradScaler.unscale_",
    "torch.cuda.amp.grad_scaler.GradScaler.no_such_method",
    "torch.nn.modules.module.register_module_full_backward_hook",
    "torch._C._autograd._no_such_function",
    "torch._C._no_such_function",
    "torch.distributed.barrier",
    "torch.distributed.no_such_function",
    "torch.compiler.is_compiling",
    "torch.compiler.no_such_function",
    "torch.cuda.amp.no_such_function",
    "torch.autograd.profiler.no_such_function",
)


@pytest.fixture(scope="session")
def live() -> dict:
    """``{"version": ..., "apis": {api: bool}}`` of the installed torch, for the table's APIs and the probes."""
    result = subprocess.run(
        [PYTHON, "-c", LIVE, json.dumps([*TABLE["apis"], *PROBES])],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0 and "No module named 'torch'" in result.stderr:
        pytest.skip("torch is not installed")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    found["version"] = found["version"].split("+")[0]
    if found["version"] not in TABLE["releases"]:
        pytest.skip(f"the installed torch {found['version']} is none of the releases in the table")
    return found


def test_the_table_agrees_with_the_installed_torch(live):
    """The table's column of the installed release, against that release imported and looked up live."""
    version = live["version"]
    differ = [
        f"{api}: the table says {TABLE['apis'][api][version]}, torch {version} says {live['apis'][api]}"
        for api in TABLE["apis"]
        if TABLE["apis"][api][version] != live["apis"][api]
    ]
    assert not differ, "\n".join(differ)


def test_the_resolver_answers_no_as_well_as_yes(live, releases):
    """On the probes, the resolver (on the installed release's sources) says what the live torch says."""
    source = releases[live["version"]]
    answers = {probe: source.has(probe) for probe in PROBES}
    assert set(answers.values()) == {True, False}, "the probes must exercise both answers"
    differ = [f"{probe}: sources {answers[probe]}, live {live['apis'][probe]}" for probe in PROBES]
    differ = [line for line, probe in zip(differ, PROBES) if answers[probe] != live["apis"][probe]]
    assert not differ, f"torch {live['version']}:\n" + "\n".join(differ)


def test_the_code_uses_only_apis_the_table_knows():
    unknown = sorted({str(use) for use in USES if not known(use.api, TABLE)})
    assert not unknown, (
        "torch APIs used but not in tests/torch_api.json (add them to APIS in tests/torch_sources.py and "
        "regenerate, or to ALLOWED here with a reason):\n" + "\n".join(unknown)
    )


def test_every_api_in_the_table_is_used():
    used = {use.api for use in USES}
    unused = [api for api in TABLE["apis"] if api not in used and not any(u.startswith(api + ".") for u in used)]
    assert not unused, "in the table but used nowhere (drop them from APIS, or add to EXTRA_USES):\n" + "\n".join(
        unused
    )


def _gap_params():
    lacking = [api for api, present in TABLE["apis"].items() if not all(present.values())]
    return [
        pytest.param(api, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[api])) if api in KNOWN_GAPS else api
        for api in lacking
    ]


@pytest.mark.parametrize("api", _gap_params())
def test_what_a_release_lacks_is_used_only_with_a_fallback(api):
    found = gaps([use for use in USES if use.api == api], TABLE)
    assert not found, "unguarded uses of an API some supported torch lacks:\n" + "\n".join(found[api])


# -- the scanner itself, on code written to exercise it ---------------------------------------------

SAMPLE = textwrap.dedent(
    """
    import importlib
    import sys

    class Clock:
        def __init__(self, torch_module):
            self._torch = torch_module

        def plain(self):
            return self._torch.new.thing()                          # 10: unguarded

        def defaulted(self):
            return getattr(self._torch.new, "thing", None)          # 13: getattr default

        def tried(self):
            try:
                module = importlib.import_module("torch.new")       # 17: try/except ImportError
            except ImportError:
                return None
            return module.thing                                     # 20: unguarded (outside the try)

        def checked(self):
            new = self._torch.new
            if not hasattr(new, "thing"):
                return None
            return new.thing                                        # 26: early return on hasattr

    def helper(mod):
        return mod.thing(flag=1)                                    # 29: mod bound by the call below

    def caller():
        dist = sys.modules.get("torch")
        helper(dist.new)                                            # 33
    """
)


def test_the_scanner_sees_uses_and_guards():
    table = {"releases": ["1", "2"], "apis": {"torch.new": {"1": True, "2": True}}}
    table["apis"]["torch.new.thing"] = {"1": False, "2": True}
    table["apis"]["torch.new.thing(flag=)"] = {"1": False, "2": True}
    uses = scan(SAMPLE, "sample.py")
    by_line = {(use.line, use.api): use.guarded for use in uses}
    assert by_line[(10, "torch.new.thing")] is False
    assert by_line[(13, "torch.new.thing")] is True
    assert by_line[(17, "torch.new")] is True
    assert by_line[(20, "torch.new.thing")] is False
    assert by_line[(26, "torch.new.thing")] is True
    assert by_line[(29, "torch.new.thing")] is False
    assert by_line[(29, "torch.new.thing(flag=)")] is False
    found = gaps(uses, table)
    assert [line.split(":")[1] for line in found["torch.new.thing"]] == ["10", "20", "29"]
    assert found["torch.new.thing(flag=)"] == ["sample.py:29: torch.new.thing(flag=): absent in torch 1"]


def _code_named(code, name: str):
    """The code object called ``name`` nested anywhere in ``code``."""
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            if const.co_name == name:
                return const
            found = _code_named(const, name)
            if found is not None:
                return found
    return None


def test_the_step_wrapper_clocks_mirrors_is_torchs_in_every_release(releases):
    """stepwrapper.py puts its own copy of torch's ``profile_hook_step`` wrapper in its place (one frame per
    step fewer) only where the wrapper has the names of the one it copies: every release has it."""
    from npuprof_launch.inprocess import stepwrapper

    for version, release in releases.items():
        path = os.path.join(release.folder, "torch/optim/optimizer.py")
        with open(path, encoding="utf-8") as stream:
            module = compile(stream.read(), path, "exec")
        wrapper = _code_named(_code_named(module, "profile_hook_step"), "wrapper")
        assert wrapper is not None, f"torch {version}: no profile_hook_step wrapper"
        assert wrapper.co_names == stepwrapper.TORCH_STEP_NAMES, f"torch {version}: its step wrapper changed"


def test_the_clocks_step_wrapper_is_placed_on_torchs_lines_in_every_release(releases):
    """stepframe.py gives the clock's wrapper torch's file and lines, so that a traceback or a warning
    through an optimizer's step reads as bare: in every release, each line of the placed wrapper is
    a line of torch's wrapper, and the call of the step is on torch's line of that call."""
    from npuprof_launch.inprocess import stepframe, stepwrapper

    for version, release in releases.items():
        path = os.path.join(release.folder, "torch/optim/optimizer.py")
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
        torch_wrapper = _code_named(_code_named(compile(text, path, "exec"), "profile_hook_step"), "wrapper")
        (factory,) = [
            node
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef) and node.name == "profile_hook_step"
        ]
        first = min([factory.lineno, *(d.lineno for d in factory.decorator_list)])
        lines = text.splitlines(keepends=True)[first - 1 : factory.end_lineno]
        qualname = getattr(torch_wrapper, "co_qualname", None)
        placed = stepframe.dress(stepwrapper._like_torch, (lines, first), path, qualname)
        assert placed is not None, f"torch {version}: the wrapper could not be placed on torch's lines"
        wrapper = _code_named(placed.__code__, "wrapper")
        assert (wrapper.co_filename, getattr(wrapper, "co_qualname", None)) == (path, qualname)
        ours = {line for *_, line in wrapper.co_lines() if line is not None}
        torch_lines = {line for *_, line in torch_wrapper.co_lines() if line is not None}
        assert ours <= torch_lines | {torch_wrapper.co_firstlineno, torch_wrapper.co_firstlineno + 1}, version
        call = next(i for i, line in enumerate(lines, first) if "out = func(*args, **kwargs)" in line)
        assert call in ours and call in torch_lines, f"torch {version}: the step's call is not on torch's line"


def test_the_installed_torch_gets_the_copy_and_trains_the_same(tmp_path):
    """With the hook on, an optimizer class's step is the clock's copy of torch's wrapper, its range
    and hooks where torch has them, and the weights come out bit for bit as without it."""
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(
            """
            import torch
            torch.manual_seed(0)
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.Adam(model.parameters(), lr=0.1)
            seen = []
            opt.register_step_pre_hook(lambda o, a, k: seen.append("pre"))
            opt.register_step_post_hook(lambda o, a, k: seen.append("post"))
            with torch.profiler.profile() as prof:
                for _ in range(3):
                    opt.zero_grad()
                    model(torch.ones(3, 4)).sum().backward()
                    opt.step()
            names = [e.name for e in prof.events() if e.name.startswith("Optimizer.step#")]
            code = type(opt).step.__code__
            ours = hasattr(type(opt).step, "_npuprof_torch_step")  # the clock's, in torch's file (stepframe.py)
            assert code.co_filename.endswith("optimizer.py") and code.co_name == "wrapper"
            print(ours, names.count("Optimizer.step#Adam.step"), seen.count("post"))
            print([round(float(v), 6) for v in model.weight.flatten()])
            """
        )
    )
    runs = profiled_against_bare([str(job)], ["--skip-first", "100"], out=str(tmp_path / "out"), cwd=ROOT, compare=())
    assert runs.bare.stdout.splitlines()[0] == "False 3 3"
    assert runs.profiled.stdout.splitlines()[0] == "True 3 3"

    def weights(stdout: str) -> str:
        return stdout.splitlines()[1]

    runs.assert_same(("stdout", weights))


def _profile_methods(release) -> dict[str, str]:
    """The methods of the release's ``torch.profiler.profile``, each as normalized source."""
    path = os.path.join(release.folder, "torch/profiler/profiler.py")
    with open(path, encoding="utf-8") as stream:
        tree = ast.parse(stream.read())
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "profile"]
    return {node.name: ast.unparse(node) for node in cls.body if isinstance(node, ast.FunctionDef)}


def test_the_step_counter_the_torch_backend_sets_is_the_releases(releases):
    """backends/torch.py (JobSteps) sets ``step_num`` to the window's first step between the
    profile's construction and its start, and takes it back off what the schedule is asked. So in
    every release: ``__init__`` sets step_num to 0 and asks the schedule for it there only;
    ``start()`` and ``step()`` name the open step ``ProfilerStep#`` + step_num; ``step()`` asks the
    schedule for step_num + 1; nothing else sets step_num; the open range is ``step_rec_fn``.
    torch 2.1's step() names the step by the count before (``cur_step``), which the backend sees
    (torch.names_by_count) and leaves to torch's own numbering."""
    from npuprof_launch.inprocess.backends.torch import OLD_COUNT_NAME

    name = "'ProfilerStep#' + str(self.step_num)"
    for version, release in releases.items():
        methods = _profile_methods(release)
        init, start, step = methods["__init__"], methods["start"], methods["step"]
        assert "self.step_num = 0" in init and "self.schedule(self.step_num)" in init, version
        assert "self.step_rec_fn" in init, version
        assert name in start, f"torch {version}: ProfilerStep# is named otherwise"
        old_count = f"'ProfilerStep#' + str({OLD_COUNT_NAME})"
        assert (old_count in step) == (version == "2.1.0") and (name in step) != (old_count in step), version
        assert "self.schedule(" not in start, version
        assert "self.schedule(" in step and ("self.step_num += 1" in step or "self.step_num + 1" in step), version
        for method, text in methods.items():
            if method not in ("__init__", "step"):
                assert not re.search(r"self\.step_num (\+)?= ", text), f"torch {version}: {method} sets step_num"
