"""The real torch_npu profiler sources, read from release wheels with ``ast``.

torch_npu cannot be imported without the Ascend driver and CANN, so the contract tests read its
Python sources instead: ``pip download --no-deps`` fetches each wheel once into a cache outside
the repository (``$NPUPROF_TEST_CACHE``, else ``$XDG_CACHE_HOME/npuprof-tests/torch_npu``, else
``~/.cache/npuprof-tests/torch_npu``), and the files are read straight from the zip.
"""

from __future__ import annotations

import ast
import glob
import os
import platform
import subprocess
import sys
import zipfile

#: The releases the contract tests check (the issue's list: oldest, the 2.4.0 without async_mode,
#: 2.6.0 without mstx, 2.9.0 without HostSystem.NUMA, and the newest).
RELEASES = ("2.1.0.post8", "2.4.0", "2.6.0", "2.9.0", "2.14.0")
#: The wheels are built for CPython 3.11 only; the sources are the same for every Python.
WHEEL_PYTHON = "3.11"
PROFILER = "torch_npu/profiler/"
CONSTANTS = PROFILER + "analysis/prof_common_func/_constant.py"
#: Where each API the backend calls is defined: file, class (or None), function.
DEFINITIONS = {
    "profile": ("profiler.py", "profile", "__init__"),
    "schedule": ("scheduler.py", "Schedule", "__init__"),
    "tensorboard_trace_handler": ("profiler.py", None, "tensorboard_trace_handler"),
    "profiler.analyse": ("profiler.py", None, "analyse"),
    "_ExperimentalConfig": ("experimental_config.py", "_ExperimentalConfig", "__init__"),
}
#: Classes of constants, and the file that defines them.
CONSTANT_CLASSES = {
    "ProfilerLevel": "experimental_config.py",
    "AiCMetrics": "experimental_config.py",
    "ExportType": "experimental_config.py",
    "HostSystem": "experimental_config.py",
    "ProfilerAction": "scheduler.py",
}
#: A default the sources compute at import time (e.g. os.cpu_count() // 2): not compared.
UNKNOWN = "<computed>"


def cache_dir() -> str:
    explicit = os.environ.get("NPUPROF_TEST_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "npuprof-tests", "torch_npu")


def _platforms() -> list[str]:
    machine = platform.machine().lower()
    arch = "aarch64" if machine in ("aarch64", "arm64") else "x86_64"
    return ["manylinux2014_" + arch, "manylinux_2_17_" + arch, "manylinux_2_28_" + arch]


def wheel(version: str) -> str:
    """The path of the wheel of ``version``, downloaded once; raises RuntimeError if it cannot be had."""
    folder = cache_dir()
    found = glob.glob(os.path.join(folder, f"torch_npu-{version}-*.whl"))
    if found:
        return found[0]
    os.makedirs(folder, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
    command += ["--python-version", WHEEL_PYTHON, "--implementation", "cp", "--dest", folder]
    for tag in _platforms():
        command += ["--platform", tag]
    result = subprocess.run([*command, f"torch-npu=={version}"], capture_output=True, text=True, timeout=900)
    found = glob.glob(os.path.join(folder, f"torch_npu-{version}-*.whl"))
    if result.returncode != 0 or not found:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"pip download torch-npu=={version} failed: {' / '.join(tail)}")
    return found[0]


class Parameter:
    def __init__(self, name: str, kind: str, default: object, annotation: str) -> None:
        self.name = name
        self.kind = kind
        self.default = default
        self.annotation = annotation

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}={self.default!r}"


class ReleaseSource:
    """What one release's profiler sources define, read with ``ast`` (nothing is imported)."""

    def __init__(self, version: str, path: str) -> None:
        self.version = version
        self.path = path
        with zipfile.ZipFile(path) as archive:
            self._files = {
                name: archive.read(name).decode("utf-8")
                for name in archive.namelist()
                if name.startswith(PROFILER) and name.endswith(".py")
            }
        self.constants = self._literal_assignments(self._class(CONSTANTS, "Constant"))

    def _tree(self, name: str) -> ast.Module:
        return ast.parse(self._files[name])

    def _class(self, name: str, cls: str) -> ast.ClassDef | None:
        for node in self._tree(name).body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                return node
        return None

    @staticmethod
    def _literal_assignments(node: ast.ClassDef | None) -> dict[str, object]:
        values = {}
        for statement in node.body if node is not None else []:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name):
                    try:
                        values[target.id] = ast.literal_eval(statement.value)
                    except ValueError:
                        values[target.id] = UNKNOWN
        return values

    def evaluate(self, node: ast.expr | None, file: str = PROFILER + "experimental_config.py") -> object:
        """A default or constant: a literal, ``Constant.X``, or ``Class.Member`` of ``file``."""
        if node is None:
            return None
        try:
            return ast.literal_eval(node)
        except ValueError:
            pass
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner, name = node.value.id, node.attr
            if owner == "Constant":
                return self.constants.get(name, UNKNOWN)
            members = self.members(owner) if owner in CONSTANT_CLASSES else None
            if members is not None and name in members:
                return members[name]
        return UNKNOWN

    def members(self, cls: str) -> dict[str, object] | None:
        """``{member: value}`` of a class of constants, or None when the release has no such class."""
        file = PROFILER + CONSTANT_CLASSES[cls]
        node = self._class(file, cls)
        if node is None:
            return None
        values = {}
        for statement in node.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                values[statement.targets[0].id] = self.evaluate(statement.value, file)
        return values

    def references(self, text: str) -> bool:
        """Whether any profiler source of the release mentions ``text`` (for the C enum ProfilerActivity)."""
        return any(text in source for source in self._files.values())

    def exports(self) -> list[str]:
        """``torch_npu.profiler.__all__`` of the release."""
        for node in self._tree(PROFILER + "__init__.py").body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
                return list(ast.literal_eval(node.value))
        raise ValueError("no __all__ in torch_npu/profiler/__init__.py")

    def parameters(self, api: str) -> dict[str, Parameter]:
        """The parameters of one API the backend calls (``self`` left out), in order."""
        file, cls, function = DEFINITIONS[api]
        body = self._class(PROFILER + file, cls).body if cls else self._tree(PROFILER + file).body
        node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == function)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        result = {}
        for arg, default in zip(positional, defaults):
            if arg.arg != "self":
                result[arg.arg] = self._parameter(arg, "positional_or_keyword", default, default is None)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            result[arg.arg] = self._parameter(arg, "keyword_only", default, default is None)
        return result

    def _parameter(self, arg: ast.arg, kind: str, default: ast.expr | None, required: bool) -> Parameter:
        value = "<required>" if required else self.evaluate(default)
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        return Parameter(arg.arg, kind, value, annotation)
