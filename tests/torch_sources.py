"""The sources of real torch releases, read from their PyPI wheels with ``ast``, and the API table.

npuprof supports torch 2.1 to 2.14, but only one torch can be installed at a time, and a whole
wheel is 85 MB to 900 MB. So the contract tests read the few files that define what npuprof calls
straight out of each release's wheel on files.pythonhosted.org, with HTTP range requests: the zip's
central directory from the end of the file, then each wanted member (a local header and its
deflated data), inflated with zlib. The wheel URLs come from PyPI's simple index (its HTML page:
the JSON API is not always reachable). Files are cached once under ``$NPUPROF_TORCH_SRC_CACHE``,
else ``$XDG_CACHE_HOME/npuprof-tests/torch-src``, else ``~/.cache/npuprof-tests/torch-src``, as
``<version>/<path in the wheel>``; nothing is ever imported from them.

C functions (``torch._C...``) are judged by the ``.pyi`` stubs the wheel ships; a name no stub
declares (``torch._C._autograd._clear_callbacks``) is looked up among the NUL-terminated
identifier strings of ``torch/lib/libtorch_python.so``, where pybind11 keeps the names it binds.
Only that list of strings is cached, not the library.

``python tests/torch_sources.py --write-table`` regenerates ``tests/torch_api.json``: for each API
in ``APIS``, which of ``RELEASES`` have it. ``test_torch_contract.py`` checks that the table is
current and that npuprof uses nothing the table does not know, nor unguarded what a release lacks.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import html.parser
import json
import os
import re
import ssl
import struct
import sys
import time
import urllib.error
import urllib.request
import zlib

#: The releases npuprof supports, oldest first (2.1, 2.4, 2.6, 2.9, 2.13 and 2.14).
RELEASES = ("2.1.0", "2.4.0", "2.6.0", "2.9.0", "2.13.0", "2.14.1")
INDEX = "https://pypi.org/simple/torch/"
#: CPython 3.11 Linux wheels; aarch64 first: the same Python sources in a smaller (CPU) build.
WHEEL_PATTERNS = (
    r"torch-{version}-cp311-cp311-manylinux[0-9a-z_]*_aarch64\.whl",
    r"torch-{version}-cp311-cp311-manylinux[0-9a-z_]*_x86_64\.whl",
)
#: The files the APIs below are resolved through (each is read only if the release has it). A
#: re-export followed into a file missing here fails the table's generation, naming the file.
FILES = (
    "torch/__init__.py",
    "torch/_C/__init__.pyi",
    "torch/_C/_autograd.pyi",
    "torch/_C/_profiler.pyi",
    "torch/optim/__init__.py",
    "torch/optim/optimizer.py",
    "torch/autograd/__init__.py",
    "torch/autograd/profiler.py",
    "torch/profiler/__init__.py",
    "torch/profiler/profiler.py",
    "torch/amp/__init__.py",
    "torch/amp/grad_scaler.py",
    "torch/cuda/__init__.py",
    "torch/cuda/graphs.py",
    "torch/cuda/amp/__init__.py",
    "torch/cuda/amp/grad_scaler.py",
    "torch/_dynamo/__init__.py",
    "torch/_dynamo/decorators.py",
    "torch/_dynamo/eval_frame.py",
    "torch/compiler/__init__.py",
    "torch/nn/__init__.py",
    "torch/nn/modules/__init__.py",
    "torch/nn/modules/module.py",
    "torch/utils/hooks.py",
    "torch/distributed/__init__.py",
    "torch/distributed/distributed_c10d.py",
    "torch/jit/__init__.py",
    "torch/jit/_script.py",
)
#: The pybind11 library whose identifier strings stand in for the stubs' missing C names.
BINDINGS = "torch/lib/libtorch_python.so"
STRINGS = BINDINGS + ".strings"
LISTING = ".listing"

#: Every torch API npuprof uses, spelled as npuprof's code reaches it. The forms:
#:
#: * ``a.b.c``: a module, a module-level name (def, class, assignment, import; a ``.pyi``
#:   declaration for ``torch._C``), or a class attribute (method, class-level assignment, or
#:   ``self.x = ...`` in one of its methods, inherited ones included);
#: * ``a.b.c(name=)``: the function (or the class's ``__init__``) takes the keyword ``name``;
#: * ``a.b.c:staticmethod``: that class attribute is a ``@staticmethod``;
#: * ``a.b.c[uses .name]``: that function's body reads or sets an attribute ``name`` (npuprof's
#:   replacement of ``profile_hook_step`` relies on ``_patch_step_function`` calling it and
#:   marking the step ``hooked``).
APIS = (
    # the optimizer clock (optimizerclock.py, stepwrapper.py)
    "torch.optim.optimizer",
    "torch.optim.optimizer.register_optimizer_step_pre_hook",
    "torch.optim.optimizer.register_optimizer_step_post_hook",
    "torch.optim.optimizer._global_optimizer_pre_hooks",
    "torch.optim.optimizer._global_optimizer_post_hooks",
    "torch.optim.optimizer.Optimizer",
    "torch.optim.optimizer.Optimizer.profile_hook_step",
    "torch.optim.optimizer.Optimizer.profile_hook_step:staticmethod",
    "torch.optim.optimizer.Optimizer._patch_step_function",
    "torch.optim.optimizer.Optimizer._patch_step_function[uses .profile_hook_step]",
    "torch.optim.optimizer.Optimizer._patch_step_function[uses .hooked]",
    "torch.optim.Optimizer",
    # a resumed job's numbering (resumed.py): the step count of a loaded optimizer state
    "torch.optim.Optimizer.load_state_dict",
    "torch.nn.Module",
    "torch.utils.hooks.RemovableHandle.remove",
    "torch.compiler.disable",
    "torch.compiler.is_compiling",
    "torch._dynamo",
    "torch._dynamo.disable",
    "torch._dynamo.decorators",
    "torch._dynamo.decorators.skip",
    "torch._dynamo.eval_frame",
    "torch._dynamo.eval_frame.skip_code",
    "torch.amp.grad_scaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.amp.grad_scaler.GradScaler.step",
    "torch.cuda.amp.grad_scaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler.step",
    # safe points (safepoints.py, session.py)
    "torch.autograd.profiler",
    "torch.autograd.profiler.record_function",
    "torch.autograd.profiler.record_function.__enter__",
    "torch.autograd.profiler.record_function.__exit__",
    "torch._C._current_graph_task_id",
    "torch.cuda.is_initialized",
    "torch.cuda.is_current_stream_capturing",
    "torch.nn.modules.module",
    "torch.nn.modules.module.register_module_forward_pre_hook",
    "torch.jit.script",
    "torch.Tensor",
    # the job's own profiler (coexist.py)
    "torch.autograd.profiler.profile._prepare_trace",
    "torch.autograd.profiler.profile._start_trace",
    "torch.autograd.profiler.profile.__exit__",
    "torch._C._autograd._profiler_enabled",
    # the torch backend (backends/torch.py)
    "torch.profiler",
    "torch.profiler.profile",
    "torch.profiler.profile(activities=)",
    "torch.profiler.profile(schedule=)",
    "torch.profiler.profile(on_trace_ready=)",
    "torch.profiler.profile(record_shapes=)",
    "torch.profiler.profile(profile_memory=)",
    "torch.profiler.profile(with_stack=)",
    "torch.profiler.profile(with_flops=)",
    "torch.profiler.profile(with_modules=)",
    "torch.profiler.profile.prepare_trace",
    "torch.profiler.profile.start",
    "torch.profiler.profile.step",
    "torch.profiler.profile.stop",
    "torch.profiler.profile.export_chrome_trace",
    "torch.profiler.schedule",
    "torch.profiler.schedule(wait=)",
    "torch.profiler.schedule(warmup=)",
    "torch.profiler.schedule(active=)",
    "torch.profiler.schedule(repeat=)",
    "torch.profiler.schedule(skip_first=)",
    "torch.profiler.ProfilerActivity.CPU",
    "torch.profiler.ProfilerActivity.CUDA",
    "torch.profiler.ProfilerActivity.PrivateUse1",
    "torch.profiler.supported_activities",
    "torch.cuda.is_available",
    # processes (process.py)
    "torch._C._autograd._clear_callbacks",
    "torch.distributed",
    "torch.distributed.is_available",
    "torch.distributed.is_initialized",
    "torch.distributed.get_rank",
)
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_api.json")
#: Bases outside torch whose members no API here comes from (a member not found is absent).
PLAIN_BASES = {"object", "Generic", "Protocol", "ABC", "Enum", "IntEnum", "NamedTuple", "ContextDecorator"}


class SourcesUnavailable(RuntimeError):
    """The index or a wheel cannot be read (offline, or PyPI refuses): the tests skip on it."""


class Unresolvable(RuntimeError):
    """The sources do not let an API be decided (a missing file, an unknown form): fix FILES or the resolver."""


def cache_root() -> str:
    explicit = os.environ.get("NPUPROF_TORCH_SRC_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "npuprof-tests", "torch-src")


# -- reading wheels over HTTP ---------------------------------------------------------------------


_tls: ssl.SSLContext | None = None


def _http(url: str, byte_range: str | None = None, timeout: float = 60) -> tuple[bytes, str]:
    """The body and Content-Range of one GET; SourcesUnavailable on any network failure.

    One TLS context serves every request: making one loads the CA store (0.3 s of CPU each time).
    """
    global _tls
    if _tls is None:
        _tls = ssl.create_default_context()
    headers = {"User-Agent": "npuprof-tests (torch_sources.py)"}
    if byte_range:
        headers["Range"] = "bytes=" + byte_range
    for attempt in range(3):
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=timeout, context=_tls) as response:
                if byte_range and response.status != 206:
                    raise SourcesUnavailable(f"{url}: the server ignored the range request")
                return response.read(), response.headers.get("Content-Range", "")
        except (urllib.error.URLError, OSError) as exc:
            if attempt == 2:
                raise SourcesUnavailable(f"cannot read {url}: {exc}") from exc
            time.sleep(1 + attempt)
    raise AssertionError("unreachable")


class _Links(html.parser.HTMLParser):
    """The ``<a href>`` targets and texts of PyPI's simple index page (PEP 503)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: dict[str, str] = {}
        self._href: str | None = None

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data) -> None:
        if self._href is not None:
            self.links[data.strip()] = self._href.split("#", 1)[0]
            self._href = None


_index_links: dict[str, str] | None = None


def wheel_url(version: str) -> str:
    """The URL of the CPython 3.11 Linux wheel of ``version``, from PyPI's simple index."""
    global _index_links
    if _index_links is None:
        body, _ = _http(INDEX)
        parser = _Links()
        parser.feed(body.decode("utf-8"))
        _index_links = parser.links
    for pattern in WHEEL_PATTERNS:
        wanted = re.compile(pattern.format(version=re.escape(version)))
        for name, url in sorted(_index_links.items()):
            if wanted.fullmatch(name):
                return url
    raise SourcesUnavailable(f"no CPython 3.11 Linux wheel of torch {version} on {INDEX}")


class RemoteWheel:
    """One wheel on the server, read member by member with range requests (zip64 included)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.members = self._central_directory()

    def _central_directory(self) -> dict[str, tuple[int, int, int]]:
        tail, content_range = _http(self.url, "-65558")  # the end record and at most a 64 KiB comment
        size = int(content_range.rsplit("/", 1)[1])
        end = tail.rfind(b"PK\x05\x06")
        if end < 0:
            raise SourcesUnavailable(f"{self.url}: no zip end record")
        _, _, _, _, count, cd_size, cd_offset, _ = struct.unpack("<IHHHHIIH", tail[end : end + 22])
        locator = tail.rfind(b"PK\x06\x07", 0, end)
        if 0xFFFFFFFF in (cd_size, cd_offset) or count == 0xFFFF:
            if locator < 0:
                raise SourcesUnavailable(f"{self.url}: zip64 without its locator")
            (record_offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
            record, _ = _http(self.url, f"{record_offset}-{record_offset + 55}")
            count, cd_size, cd_offset = struct.unpack("<QQQ", record[32:56])
        start = size - len(tail)
        if cd_offset >= start:  # already in hand
            directory = tail[cd_offset - start : cd_offset - start + cd_size]
        else:
            directory, _ = _http(self.url, f"{cd_offset}-{cd_offset + cd_size - 1}")
        members = {}
        position = 0
        while position + 46 <= len(directory) and directory[position : position + 4] == b"PK\x01\x02":
            fields = struct.unpack("<IHHHHHHIIIHHHHHII", directory[position : position + 46])
            method, compressed, uncompressed = fields[4], fields[8], fields[9]
            name_length, extra_length, comment_length, offset = fields[10], fields[11], fields[12], fields[16]
            name = directory[position + 46 : position + 46 + name_length].decode("utf-8")
            extra = directory[position + 46 + name_length : position + 46 + name_length + extra_length]
            if 0xFFFFFFFF in (compressed, uncompressed, offset):
                uncompressed, compressed, offset = self._zip64_sizes(extra, uncompressed, compressed, offset)
            members[name] = (method, compressed, offset)
            position += 46 + name_length + extra_length + comment_length
        return members

    @staticmethod
    def _zip64_sizes(extra: bytes, uncompressed: int, compressed: int, offset: int) -> tuple[int, int, int]:
        position = 0
        while position + 4 <= len(extra):
            tag, length = struct.unpack("<HH", extra[position : position + 4])
            if tag == 1:
                values = list(struct.unpack(f"<{length // 8}Q", extra[position + 4 : position + 4 + length]))
                if uncompressed == 0xFFFFFFFF:
                    uncompressed = values.pop(0)
                if compressed == 0xFFFFFFFF:
                    compressed = values.pop(0)
                if offset == 0xFFFFFFFF:
                    offset = values.pop(0)
            position += 4 + length
        return uncompressed, compressed, offset

    def read(self, name: str) -> bytes:
        method, compressed, offset = self.members[name]
        # The local header's extra field may differ from the central one: ask for some slack.
        data, _ = _http(self.url, f"{offset}-{offset + 30 + len(name.encode()) + 1024 + compressed - 1}")
        name_length, extra_length = struct.unpack("<HH", data[26:30])
        body = data[30 + name_length + extra_length : 30 + name_length + extra_length + compressed]
        if method == 0:
            return body
        if method == 8:
            return zlib.decompress(body, -15)
        raise Unresolvable(f"{name}: zip compression method {method}")


def _identifier_strings(library: bytes) -> list[str]:
    """The NUL-terminated runs of identifier characters in a shared library (the names pybind11 binds),
    less the mangled C++ symbols (``_Z...``), which are most of them and never a Python name."""
    tokens = re.findall(rb"[A-Za-z_][A-Za-z0-9_]{2,}\x00", library)  # (a lookahead is 3 times slower)
    return sorted({token[:-1].decode() for token in tokens if not token.startswith(b"_Z")})


def fetch(version: str) -> str:
    """The cache folder of ``version`` holding every file of FILES the release has; fetched once.

    Raises SourcesUnavailable when something missing from the cache cannot be fetched.
    """
    folder = os.path.join(cache_root(), version)
    listing_path = os.path.join(folder, LISTING)
    listing = set()
    if os.path.isfile(listing_path):
        with open(listing_path, encoding="utf-8") as stream:
            listing = set(stream.read().split())
    wanted = [name for name in (*FILES, BINDINGS) if not listing or name in listing]
    kept_as = {BINDINGS: STRINGS}  # the library is kept as its list of strings
    missing = [name for name in wanted if not os.path.isfile(os.path.join(folder, kept_as.get(name, name)))]
    if listing and not missing:
        return folder
    remote = RemoteWheel(wheel_url(version))
    names = sorted(name for name in remote.members if name.startswith("torch/") and name.endswith((".py", ".pyi")))
    names.append(BINDINGS)
    missing = [name for name in missing if name in remote.members]

    def one(name: str) -> tuple[str, bytes]:
        data = remote.read(name)
        if name == BINDINGS:
            return STRINGS, "\n".join(_identifier_strings(data)).encode()
        return name, data

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for name, data in pool.map(one, missing):
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            part = f"{path}.{os.getpid()}.part"  # parallel test workers may fetch the same file at once
            with open(part, "wb") as stream:
                stream.write(data)
            os.replace(part, path)
    part = f"{listing_path}.{os.getpid()}.part"
    with open(part, "w", encoding="utf-8") as stream:  # last: it marks the folder complete
        stream.write("\n".join(names) + "\n")
    os.replace(part, listing_path)
    with open(os.path.join(folder, ".wheel"), "w", encoding="utf-8") as stream:
        stream.write(remote.url + "\n")
    return folder


# -- what a release defines, by ast -----------------------------------------------------------------


class _Symbol:
    """What a dotted name resolved to: a module, or a node (def, class, assignment, stub) in a module."""

    def __init__(self, module: str, node: ast.AST | None = None, kind: str = "module") -> None:
        self.module = module
        self.node = node
        self.kind = kind  # module, function, class, value


class ReleaseSource:
    """One release's sources in the cache, asked which APIs exist (nothing is imported)."""

    def __init__(self, version: str, folder: str) -> None:
        self.version = version
        self.folder = folder
        with open(os.path.join(folder, LISTING), encoding="utf-8") as stream:
            self.listing = set(stream.read().split())
        self._trees: dict[str, ast.Module] = {}
        self.evidence: dict[str, str] = {}
        strings = os.path.join(folder, STRINGS)
        self._strings: set[str] = set()
        if os.path.isfile(strings):
            with open(strings, encoding="utf-8") as stream:
                self._strings = set(stream.read().split())

    # files and modules

    def module_file(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for candidate in (base + ".py", base + "/__init__.py", base + ".pyi", base + "/__init__.pyi"):
            if candidate in self.listing:
                return candidate
        return None

    def is_module(self, module: str) -> bool:
        return self.module_file(module) is not None

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            file = self.module_file(module)
            path = os.path.join(self.folder, file) if file else None
            if path is None or not os.path.isfile(path):
                raise Unresolvable(f"torch {self.version}: {file or module} is needed: add it to FILES")
            with open(path, encoding="utf-8") as stream:
                self._trees[module] = ast.parse(stream.read())
        return self._trees[module]

    # names

    @staticmethod
    def _statements(body: list[ast.stmt]):
        """A module's statements, those inside top-level ``if`` and ``try`` blocks included."""
        for node in body:
            yield node
            if isinstance(node, ast.If):
                yield from ReleaseSource._statements(node.body)
                yield from ReleaseSource._statements(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    yield from ReleaseSource._statements(block)

    @staticmethod
    def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
        if not node.level:
            return node.module or ""
        parts = module.split(".")
        base = parts if is_package else parts[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def name_in(self, module: str, name: str, seen: frozenset = frozenset()) -> _Symbol | None:
        """What ``module`` binds to ``name`` at module level (following imports), or None."""
        if (module, name) in seen:
            return None
        seen = seen | {(module, name)}
        file = self.module_file(module) or ""
        is_package = file.endswith(("__init__.py", "__init__.pyi"))
        stars = []
        for node in self._statements(self.tree(module).body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return _Symbol(module, node, "function")
            if isinstance(node, ast.ClassDef) and node.name == name:
                return _Symbol(module, node, "class")
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return self._assigned(module, node.value, seen)
            if isinstance(node, ast.ImportFrom):
                source = self._absolute(module, node, is_package)
                for alias in node.names:
                    if alias.name == "*":
                        stars.append(source)
                    elif (alias.asname or alias.name) == name:
                        return self._imported(source, alias.name, seen)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname == name:
                        return _Symbol(alias.name)
                    if alias.asname is None and alias.name.split(".")[0] == name:
                        return _Symbol(name)
        if self.is_module(f"{module}.{name}"):
            return _Symbol(f"{module}.{name}")
        unread = []
        for source in stars:
            if not source.startswith("torch"):
                continue
            file = self.module_file(source)
            if file is None or not os.path.isfile(os.path.join(self.folder, file)):
                unread.append(source)
            elif self._exported(source, name):
                found = self.name_in(source, name, seen)
                if found is not None:
                    return found
        if unread:
            raise Unresolvable(f"torch {self.version}: {module}.{name} may come from {unread}: add them to FILES")
        return None

    def _imported(self, source: str, name: str, seen: frozenset) -> _Symbol:
        if self.is_module(f"{source}.{name}"):
            return _Symbol(f"{source}.{name}")
        if not source.startswith("torch") or self.module_file(source) is None:
            return _Symbol(source, None, "value")  # bound, from outside the files read
        try:
            found = self.name_in(source, name, seen)
        except Unresolvable:
            return _Symbol(source, None, "value")  # bound; what it is is asked only if more follows
        return found if found is not None else _Symbol(source, None, "value")

    def _assigned(self, module: str, value: ast.expr | None, seen: frozenset) -> _Symbol:
        """An alias (``x = y`` or ``x = a.b``) resolves to what it names; anything else is a value."""
        dotted = _dotted(value) if value is not None else None
        if dotted:
            first, *rest = dotted.split(".")
            found = self.name_in(module, first, seen)
            if found is not None and (found.kind != "value" or not rest):
                return self.walk(found, rest) or _Symbol(module, value, "value")
        return _Symbol(module, value, "value")

    def _exported(self, module: str, name: str) -> bool:
        for node in self.tree(module).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    try:
                        return name in ast.literal_eval(node.value)
                    except ValueError:
                        return True
        return not name.startswith("_")

    # class members

    def member(self, cls: _Symbol, name: str, seen: frozenset = frozenset()) -> _Symbol | None:
        """A class's attribute ``name``: in its body, set as ``self.name`` in a method, or inherited."""
        node = cls.node
        assert isinstance(node, ast.ClassDef)
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
                return _Symbol(cls.module, statement, "function")
            if isinstance(statement, ast.ClassDef) and statement.name == name:
                return _Symbol(cls.module, statement, "class")
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return _Symbol(cls.module, statement.value, "value")
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(statement):
                    if (
                        isinstance(sub, ast.Attribute)
                        and isinstance(sub.ctx, ast.Store)
                        and sub.attr == name
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id == "self"
                    ):
                        return _Symbol(cls.module, sub, "value")
        for base in node.bases:
            dotted = _dotted(base.value if isinstance(base, ast.Subscript) else base)
            if dotted is None:
                raise Unresolvable(f"torch {self.version}: base {ast.unparse(base)} of {node.name}")
            if dotted.split(".")[-1] in PLAIN_BASES:
                continue
            first, *rest = dotted.split(".")
            found = self.name_in(cls.module, first)
            found = self.walk(found, rest) if found is not None else None
            if found is None or found.kind != "class":
                raise Unresolvable(f"torch {self.version}: base {dotted} of {cls.module}.{node.name}")
            key = (found.module, found.node.name, name)
            if key not in seen:
                inherited = self.member(found, name, seen | {key})
                if inherited is not None:
                    return inherited
        return None

    # dotted names

    def walk(self, symbol: _Symbol | None, parts: list[str]) -> _Symbol | None:
        for part in parts:
            if symbol is None:
                return None
            if symbol.kind == "module":
                if self.module_file(symbol.module):
                    symbol = self.name_in(symbol.module, part)
                else:
                    symbol = _Symbol(f"{symbol.module}.{part}") if self.is_module(f"{symbol.module}.{part}") else None
            elif symbol.kind == "class":
                symbol = self.member(symbol, part)
            else:
                raise Unresolvable(f"torch {self.version}: cannot look inside {ast.unparse(symbol.node or ast.Pass())}")
        return symbol

    def find(self, dotted: str) -> _Symbol | None:
        """What ``dotted`` names in this release, or None when it has no such thing."""
        parts = dotted.split(".")
        for length in range(len(parts), 0, -1):
            module = ".".join(parts[:length])
            if self.is_module(module):
                if length == len(parts):
                    return _Symbol(module)
                if self.module_file(module) is None or self.module_file(module).endswith(".pyi"):
                    return self._declared(module, parts[length:])
                return self.walk(_Symbol(module), parts[length:])
        return None

    def _declared(self, module: str, parts: list[str]) -> _Symbol | None:
        """A name of a C module: its stub's declaration, else a string of the bindings library."""
        found = self.walk(_Symbol(module), parts) if self.module_file(module) else None
        if found is not None:
            return found
        if len(parts) == 1 and parts[0] in self._strings:
            self.evidence[f"{module}.{parts[0]}"] = BINDINGS
            return _Symbol(module, None, "value")
        return None

    def has(self, api: str) -> bool:
        """Whether this release has ``api`` (see APIS for the forms)."""
        fact = re.fullmatch(r"(.+)\[uses \.(\w+)\]", api)
        if fact:
            found = self.find(fact.group(1))
            return found is not None and any(
                isinstance(node, ast.Attribute) and node.attr == fact.group(2) for node in ast.walk(found.node)
            )
        keyword = re.fullmatch(r"(.+)\((\w+)=\)", api)
        if keyword:
            return keyword.group(2) in self.keywords(keyword.group(1))
        if api.endswith(":staticmethod"):
            found = self.find(api[: -len(":staticmethod")])
            return (
                found is not None
                and found.kind == "function"
                and any(_dotted(d) == "staticmethod" for d in found.node.decorator_list)
            )
        return self.find(api) is not None

    def keywords(self, dotted: str) -> set[str]:
        """The names a call of ``dotted`` takes as keywords (a class: its ``__init__``'s)."""
        found = self.find(dotted)
        if found is not None and found.kind == "class":
            found = self.member(found, "__init__")
        if found is None:
            return set()
        if found.kind != "function":
            raise Unresolvable(f"torch {self.version}: {dotted} is no function")
        arguments = found.node.args
        return {a.arg for a in (*arguments.args, *arguments.kwonlyargs)} - {"self"}


def _dotted(node: ast.expr | None) -> str | None:
    """``a.b.c`` for a Name or a chain of Attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


# -- the table -------------------------------------------------------------------------------------


def sources() -> dict[str, ReleaseSource]:
    """Every release's sources (fetched as needed, in parallel); SourcesUnavailable when offline."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(RELEASES)) as pool:
        folders = dict(zip(RELEASES, pool.map(fetch, RELEASES)))
    return {version: ReleaseSource(version, folder) for version, folder in folders.items()}


def build_table(releases: dict[str, ReleaseSource]) -> dict:
    """``{"releases": [...], "apis": {api: {version: bool}}, "evidence": {api: {version: file}}}``."""
    table = {"releases": list(releases), "apis": {}, "evidence": {}}
    for api in APIS:
        table["apis"][api] = {version: source.has(api) for version, source in releases.items()}
    for version, source in releases.items():
        for api, where in source.evidence.items():
            table["evidence"].setdefault(api, {})[version] = f"not in the stubs; a string of {where}"
    table["evidence"] = dict(sorted(table["evidence"].items()))
    return table


def dump(table: dict) -> str:
    return json.dumps(table, indent=1) + "\n"


def load_table() -> dict:
    with open(TABLE, encoding="utf-8") as stream:
        return json.load(stream)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write-table", action="store_true", help=f"regenerate {os.path.basename(TABLE)}")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        table = build_table(sources())
    except SourcesUnavailable as exc:
        print(f"cannot fetch the torch sources: {exc}", file=sys.stderr)
        return 2
    print(f"sources of {len(RELEASES)} releases read in {time.monotonic() - started:.1f} s ({cache_root()})")
    for api, present in table["apis"].items():
        lacking = [version for version, has in present.items() if not has]
        if lacking:
            print(f"  {api}: not in {', '.join(lacking)}")
    if args.write_table:
        with open(TABLE, "w", encoding="utf-8") as stream:
            stream.write(dump(table))
        print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
