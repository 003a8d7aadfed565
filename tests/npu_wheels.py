"""The real torch_npu profiler sources, read from release wheels with ``ast``.

torch_npu cannot be imported without the Ascend driver and CANN, so the contract tests read its
Python sources instead: ``pip download --no-deps`` fetches each wheel once into a cache outside
the repository (``$NPUPROF_TEST_CACHE``, else ``$XDG_CACHE_HOME/npuprof-tests/torch_npu``, else
``~/.cache/npuprof-tests/torch_npu``), and the files are read straight from the zip. A release
that is not on PyPI yet (2.15, from the master branch) is read from a verbatim extract of its
sources checked in under ``tests/npu_sources`` (``SOURCE_DIRS``; see the README there).
"""

from __future__ import annotations

import ast
import fcntl
import glob
import os
import platform
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
#: The version a build of the checked-in master sources reports (setup.py adds +git and the sha).
MASTER = "2.15.0+git9e73e70"
#: Releases read from sources checked in here rather than from a wheel: CI reaches only PyPI.
SOURCE_DIRS = {MASTER: os.path.join(HERE, "npu_sources", "master-2.15")}
#: The releases the contract tests check: the oldest, the 2.4.0 without async_mode, 2.6.0 without
#: mstx, 2.9.0 without HostSystem.NUMA, the newest on PyPI (2.14.0, the newest 2.14.x there on
#: 2026-12-01) and master's 2.15.
RELEASES = ("2.1.0.post8", "2.4.0", "2.6.0", "2.9.0", "2.14.0", MASTER)
#: Where the first msPTI profiler for torch.profiler appeared: 2.12.0.post2 lacks it, 2.12.0.post3
#: (a backport) and 2.13.0 have it. Read only by the msPTI contract test.
MSPTI_BOUNDARY = ("2.12.0.post2", "2.12.0.post3", "2.13.0")
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

#: torch_npu's msPTI profiler for plain torch.profiler (ProfilerActivity.PrivateUse1): the header a
#: wheel ships (what the torch backend looks for in an installed torch_npu), the library it is
#: compiled into, and in checked-in sources the C++ that registers it and the libmspti.so check.
MSPTI_HEADER = "torch_npu/include/torch_npu/csrc/profiler/mspti_activity_profiler.h"
MSPTI_LIBRARY = "torch_npu/lib/libtorch_npu.so"
MSPTI_SOURCES = {
    "header": "torch_npu/csrc/profiler/mspti_activity_profiler.h",
    "profiler": "torch_npu/csrc/profiler/mspti_activity_profiler.cpp",
    "interface": "torch_npu/csrc/framework/interface/MsptiInterface.cpp",
}
#: Where a release renames PrivateUse1 to npu (torch.utils.rename_privateuse1_backend("npu")).
RENAME_FILES = ("torch_npu/__init__.py", "torch_npu/_init/registry/backend.py")


def cache_dir() -> str:
    explicit = os.environ.get("NPUPROF_TEST_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "npuprof-tests", "torch_npu")


def sources(version: str) -> str:
    """Where the sources of ``version`` are: its checked-in directory, else its wheel (downloaded once)."""
    return SOURCE_DIRS.get(version) or wheel(version)


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
    # Parallel test workers ask for the same wheel at once: one downloads, the others wait for it
    # (a wheel half-copied into the folder would look found to a glob).
    with open(os.path.join(folder, f".torch_npu-{version}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _download(folder, version)


def _download(folder: str, version: str) -> str:
    found = glob.glob(os.path.join(folder, f"torch_npu-{version}-*.whl"))
    if found:
        return found[0]
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
    """What one release's profiler sources define, read with ``ast`` (nothing is imported).

    ``path`` is a wheel, or a directory holding the release's files under their paths in the
    wheel (``torch_npu/profiler/...``), as ``tests/npu_sources/*`` does.
    """

    def __init__(self, version: str, path: str) -> None:
        self.version = version
        self.path = path
        self._files = {
            name: self.read(name).decode("utf-8")
            for name in self._names()
            if name.startswith(PROFILER) and name.endswith(".py")
        }
        self.constants = self._literal_assignments(self._class(CONSTANTS, "Constant"))

    @property
    def is_wheel(self) -> bool:
        return not os.path.isdir(self.path)

    def _names(self) -> list[str]:
        if self.is_wheel:
            with zipfile.ZipFile(self.path) as archive:
                return archive.namelist()
        names = []
        for folder, _, files in os.walk(self.path):
            for file in files:
                names.append(os.path.relpath(os.path.join(folder, file), self.path).replace(os.sep, "/"))
        return sorted(names)

    def read(self, name: str) -> bytes | None:
        """The bytes of one file of the release (any file, not only the profiler's); None if absent."""
        if self.is_wheel:
            with zipfile.ZipFile(self.path) as archive:
                try:
                    return archive.read(name)
                except KeyError:
                    return None
        try:
            with open(os.path.join(self.path, *name.split("/")), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def mspti(self) -> dict[str, bool]:
        """What the release has of the msPTI profiler that records NPU kernels through plain
        torch.profiler (PrivateUse1), each fact from the release's own files:

        ``header``: it declares ``MsptiActivityProfilerPoc``, the libkineto profiler "registered for
        ProfilerActivity.PrivateUse1" (in a wheel: the header it ships, which the torch backend
        looks for in an installed torch_npu); ``registered``: that profiler is compiled in (a
        wheel's libtorch_npu.so) or registered (``REGISTER_PRIVATEUSE1_PROFILER`` in the sources);
        ``libmspti``: the session runs only when ``$ASCEND_HOME_PATH/lib64/libmspti.so`` exists;
        ``npu_backend``: torch_npu renames PrivateUse1 to ``npu`` (so torch.profiler lists it).
        """
        rename = any(b'rename_privateuse1_backend("npu")' in (self.read(name) or b"") for name in RENAME_FILES)
        if self.is_wheel:
            header = self.read(MSPTI_HEADER) or b""
            library = self.read(MSPTI_LIBRARY) or b""
            registered = b"MsptiActivityProfilerPoc" in library
            gate = library
        else:
            header = self.read(MSPTI_SOURCES["header"]) or b""
            profiler = self.read(MSPTI_SOURCES["profiler"]) or b""
            registered = b"REGISTER_PRIVATEUSE1_PROFILER(MsptiActivityProfilerPoc)" in profiler
            gate = self.read(MSPTI_SOURCES["interface"]) or b""
        return {
            "header": b"class MsptiActivityProfilerPoc" in header and b"ProfilerActivity.PrivateUse1" in header,
            "registered": registered,
            "libmspti": b"ASCEND_HOME_PATH" in gate and b"/lib64/libmspti.so" in gate,
            "npu_backend": rename,
        }

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


_READ: dict[str, ReleaseSource] = {}


def release_source(version: str) -> ReleaseSource:
    """One release's sources, read once per test process; skips the test asking when its wheel
    cannot be fetched (no package index)."""
    if version not in _READ:
        try:
            _READ[version] = ReleaseSource(version, sources(version))
        except RuntimeError as exc:
            import pytest

            pytest.skip(f"cannot fetch the torch_npu {version} wheel (needs PyPI): {exc}")
    return _READ[version]
