"""The session directories the torch_npu stand-in writes, tied to the real releases' sources.

The stand-in writes what torch_npu writes (tests/standin/README.md); each fact it relies on is
checked here against the release it imitates, read from the wheel (npu_wheels.py). Where a piece of
the real code can run on its own, it runs, with its imports stubbed: the directory name of
_profiler_path_creator.py, profiler_info of profiler_interface.py's _dump_profiler_info, the session
search of _path_manager.py. Otherwise its names and values are read with ``ast``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import subprocess
import time
import types
from datetime import datetime, timezone

import npu_layout
import pytest
from jobs import PYTHON, clean_env
from npu_wheels import UNKNOWN, ReleaseSource, release_source

from npuprof_launch.common import deliverables

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin")
PROFILER = "torch_npu/profiler/"
ANALYSIS = PROFILER + "analysis/"
#: A moment whose local and UTC dates differ in the zone the names are made in.
WHEN = datetime(2026, 1, 2, 20, 4, 5, 678901, tzinfo=timezone.utc)
ZONE = "Asia/Shanghai"
WORKERS = ["node1_rank0_pid42", None]


@pytest.fixture(scope="module", params=["2.14.0", "2.4.0"])
def release(request) -> ReleaseSource:
    return release_source(request.param)


# -- what the stand-in does, in a process of its own (importing it imports torch) ---------------

DUMP = r"""
import json, os, sys
from datetime import datetime
import torch_npu
from torch_npu.profiler import _profiler_path_creator as creator
from torch_npu.profiler.analysis import _npu_profiler
from torch_npu.profiler.analysis.prof_common_func._constant import Constant
from torch_npu.profiler.analysis.prof_config import _parser_config

args = json.loads(sys.argv[1])
when = datetime.fromisoformat(args["when"])
CONFIGS = ("COMMON_CONFIG", "LEVEL_NONE_CONFIG", "ONLY_FWK_CONFIG")
p = torch_npu.profiler
prof = p.profile(
    schedule=p.schedule(wait=0, active=1, repeat=1),
    on_trace_ready=p.tensorboard_trace_handler(args["out"]),
    experimental_config=p._ExperimentalConfig(profiler_level=p.ProfilerLevel.Level1),
)
prof.start()
prof.step()
prof.stop()
(session,) = os.listdir(args["out"])
tree = []
for folder, _, names in os.walk(os.path.join(args["out"], session)):
    tree += [os.path.relpath(os.path.join(folder, name), os.path.join(args["out"], session)) for name in names]
print(json.dumps({
    "constants": {k: v for k, v in vars(Constant).items() if not k.startswith("_")},
    "names": [creator.session_name(worker, args["pid"], when) for worker in args["workers"]],
    "parsers": {name: getattr(_parser_config, name) for name in CONFIGS},
    "sub_process": sorted(_parser_config.SUB_PROCESS),
    "found": {path: sorted(os.path.relpath(f, args["layout"]) for f in _npu_profiler.get_profiler_path_list(path))
              for path in args["search"]},
    "session": session,
    "tree": sorted(tree),
}))
"""

_standins: dict[tuple[str, bool], dict] = {}


def standin(release: ReleaseSource, tmp_path_factory, ranked: bool) -> dict:
    """What the stand-in imitating ``release`` does: its constants, names, parse steps and one parsed window."""
    key = (release.version, ranked)
    if key not in _standins:
        root = tmp_path_factory.mktemp("standin")
        layout = _layout(str(root / "layout"))
        args = {
            "when": WHEN.isoformat(),
            "pid": os.getpid(),
            "workers": WORKERS,
            "out": str(root / "out"),
            "layout": layout,
            "search": [layout, os.path.join(layout, "a_ascend_pt"), os.path.join(layout, "plain")],
        }
        env = clean_env(PYTHONPATH=STANDIN, TORCH_NPU_STANDIN_VERSION=release.version, TZ=ZONE)
        env.pop("RANK", None)
        if ranked:
            env["RANK"] = "5"
        result = subprocess.run(
            [PYTHON, "-c", DUMP, json.dumps(args)], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
        dump = json.loads(result.stdout.splitlines()[-1])
        dump["layout"], dump["out"] = layout, args["out"]
        _standins[key] = dump
    return _standins[key]


def _layout(root: str) -> str:
    """Directories to search for sessions: one with FRAMEWORK/, one with a PROF_ directory only,
    one with neither, and a file."""
    os.makedirs(os.path.join(root, "a_ascend_pt", "FRAMEWORK"))
    os.makedirs(os.path.join(root, "b_ascend_pt", "PROF_000001_20260101120000123_ABCDEFGH"))
    os.makedirs(os.path.join(root, "plain", "other"))
    with open(os.path.join(root, "notes.txt"), "w") as handle:
        handle.write("not a session\n")
    return root


# -- running a piece of the real code, its imports stubbed -------------------------------------


def run_source(text: str, names: dict) -> dict:
    """The module's top-level definitions, executed without its imports (``names`` stands in for them)."""
    tree = ast.parse(text)
    tree.body = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    scope = dict(names)
    exec(compile(tree, "<torch_npu source>", "exec"), scope)  # noqa: S102 - a released torch_npu file
    return scope


def constants(release: ReleaseSource) -> types.SimpleNamespace:
    return types.SimpleNamespace(**release.constants)


class _Quiet:
    """PathManager, FileManager and the like: their checks pass, their writes are caught."""

    written: dict[str, object] = {}

    def __getattr__(self, name):
        if name == "make_dir_safety":
            return lambda path: os.makedirs(path, exist_ok=True)
        if name == "create_json_file_by_path":
            return lambda path, data, indent=None: self.written.__setitem__(path, data)
        return lambda *args, **kwargs: None


class _FrozenDatetime(datetime):
    """``datetime`` stopped at WHEN (its now() and utcnow() as the real ones give them)."""

    @classmethod
    def now(cls, tz=None):
        return WHEN.astimezone(tz) if tz is not None else WHEN.astimezone().replace(tzinfo=None)

    @classmethod
    def utcnow(cls):
        return WHEN.replace(tzinfo=None)


@pytest.fixture
def zone(monkeypatch):
    """This process in ZONE, as the stand-in's process is."""
    monkeypatch.setenv("TZ", ZONE)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# -- the session directory's name ---------------------------------------------------------------


def test_the_session_directory_is_named_as_the_release_names_it(release, tmp_path_factory, tmp_path, zone):
    """_profiler_path_creator.py, run: 2.14.0 ``{worker or hostname}_{pid}_{local time}_ascend_pt``,
    2.4.0 ``{worker, or hostname_pid}_{UTC time}_ascend_pt``, the time to the millisecond."""
    scope = run_source(
        release._files[PROFILER + "_profiler_path_creator.py"],
        {
            "os": os,
            "socket": socket,
            "shutil": None,
            "datetime": _FrozenDatetime,
            "timezone": timezone,
            "PathManager": _Quiet(),
            "Constant": constants(release),
            "Singleton": lambda cls: cls,
            "print_warn_msg": print,
            "ProfilerPathManager": types.SimpleNamespace(get_realpath=os.path.realpath),
        },
    )
    real = []
    for worker in WORKERS:
        creator = scope["ProfPathCreator"]()
        creator.init(worker_name=worker, dir_name=str(tmp_path))
        creator.create_prof_dir()
        real.append(os.path.basename(creator.get_prof_dir()))
    assert standin(release, tmp_path_factory, ranked=False)["names"] == real


def test_the_standin_s_session_is_in_the_output_directory_under_that_name(release, tmp_path_factory):
    dump = standin(release, tmp_path_factory, ranked=False)
    host = re.escape(socket.gethostname())
    stamp = r"_\d{17}_ascend_pt"
    pattern = rf"{host}_\d+{stamp}"
    assert re.fullmatch(pattern, dump["session"]), dump["session"]


# -- the session search of analyse ----------------------------------------------------------------


def test_sessions_are_found_where_the_release_finds_them(release, tmp_path_factory):
    """ProfilerPathManager.get_profiler_path_list, run: the path itself when it holds FRAMEWORK/ or a
    PROF_* directory, else each direct subdirectory that does."""
    dump = standin(release, tmp_path_factory, ranked=False)
    scope = run_source(
        release._files[ANALYSIS + "prof_common_func/_path_manager.py"],
        {"os": os, "re": re, "warnings": None, "ErrCode": None, "Constant": constants(release)},
    )
    manager = scope["ProfilerPathManager"]
    for path, found in dump["found"].items():
        real = sorted(os.path.relpath(p, dump["layout"]) for p in manager.get_profiler_path_list(path))
        assert found == real, path
    assert dump["found"][dump["layout"]] == ["a_ascend_pt", "b_ascend_pt"]


# -- profiler_info -----------------------------------------------------------------------------------


def _real_profiler_info(release: ReleaseSource, rank: str | None, monkeypatch) -> tuple[str, dict]:
    """The file name and content _dump_profiler_info writes, run on a profile like the stand-in's."""
    source = release._files[PROFILER + "profiler_interface.py"]
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "_ProfInterface")
    method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_dump_profiler_info")
    files = _Quiet()
    files.written = {}
    not_distributed = types.SimpleNamespace(is_available=lambda: False, is_initialized=lambda: False)
    scope = run_source(
        ast.unparse(method),
        {
            "os": os,
            "time": time,
            "torch": types.SimpleNamespace(distributed=not_distributed),
            "Constant": constants(release),
            "FileManager": files,
            "get_torch_npu_version": lambda: release.version,
            "get_cann_version": lambda: "8.3.RC1",
        },
    )
    schedule, config = types.SimpleNamespace(), types.SimpleNamespace()
    for obj, file, cls_name in (
        (schedule, "scheduler.py", "Schedule"),
        (config, "experimental_config.py", "_ExperimentalConfig"),
    ):
        for name in _attributes(release, file, cls_name):
            setattr(obj, name, None)
    profile = types.SimpleNamespace(
        activities={"ProfilerActivity.CPU"},
        schedule=schedule,
        experimental_config=config,
        prof_path="/session",
        syscnt_enable=True,
        freq=100.0,
        start_cnt=1,
        start_monotonic=2,
        **dict.fromkeys(("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"), False),
    )
    if rank is None:
        monkeypatch.delenv("RANK", raising=False)
    else:
        monkeypatch.setenv("RANK", rank)
    scope["_dump_profiler_info"](profile)
    ((path, info),) = files.written.items()
    return os.path.basename(path), info


def _attributes(release: ReleaseSource, file: str, cls_name: str) -> list[str]:
    """The attributes ``__init__`` of a class of the release sets on ``self``, in order."""
    cls = release._class(PROFILER + file, cls_name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    names = []
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and getattr(node.value, "id", "") == "self"
        ):
            if node.attr not in names:
                names.append(node.attr)
    return names


def _shape(value) -> object:
    """Keys all the way down, values left out."""
    return {key: _shape(item) for key, item in value.items()} if isinstance(value, dict) else None


@pytest.mark.parametrize("ranked", [True, False], ids=["RANK=5", "no rank"])
def test_profiler_info_is_named_and_keyed_as_the_release_writes_it(release, tmp_path_factory, monkeypatch, ranked):
    """profiler_info_{RANK}.json with rank_id (a string, from $RANK), profiler_info.json without;
    the same keys at every level, the configs as their objects' __dict__ (_trans_obj2cfg)."""
    dump = standin(release, tmp_path_factory, ranked=ranked)
    name, real = _real_profiler_info(release, "5" if ranked else None, monkeypatch)
    assert name in dump["tree"], dump["tree"]
    with open(os.path.join(dump["out"], dump["session"], name)) as handle:
        written = json.load(handle)
    schedule = written["config"]["common_config"]["schedule"]
    experimental = written["config"]["experimental_config"]
    assert list(schedule) == _attributes(release, "scheduler.py", "Schedule")
    assert list(experimental) == _attributes(release, "experimental_config.py", "_ExperimentalConfig")
    assert _shape(written) == _shape(real)
    assert written.get("rank_id") == real.get("rank_id")


# -- the parse ---------------------------------------------------------------------------------------


def test_the_parse_leaves_what_the_release_s_parse_leaves(release, tmp_path_factory):
    """ASCEND_PROFILER_OUTPUT/ with its files; analyse.done and logs/ only where the release's
    _profiling_parser.py writes one and it has a ProfilerLogger; FRAMEWORK/ removed by 2.4.0's
    data_simplification; and what the product's checks ask of a parsed text session."""
    dump = standin(release, tmp_path_factory, ranked=False)
    tree = dump["tree"]
    output = release.constants["OUTPUT_DIR"]
    assert output == deliverables.ASCEND_OUTPUT
    parser = release._files[ANALYSIS + "_profiling_parser.py"]
    writes_done = 'create_empty_file(self._output_path, "analyse.done")' in parser
    assert writes_done == (release.version != "2.4.0")
    assert (f"{output}/analyse.done" in tree) == writes_done
    has_logger = ANALYSIS + "prof_common_func/_log.py" in release._files
    logs = [path for path in tree if path.startswith("logs/")]
    assert bool(logs) == has_logger
    if has_logger:
        assert 'f"profiler_{timestamp}_{os.getpid()}_{custom_name}.log"' in release._files[
            ANALYSIS + "prof_common_func/_log.py"
        ].replace("'", '"')
        assert any(re.fullmatch(r"logs/profiler_\d{14}_\d+_ProfilingParser\.log", path) for path in logs), logs
    simplifies_framework = "remove_path_safety(fwk_path)" in parser
    assert any(path.startswith(release.constants["FRAMEWORK_DIR"] + "/") for path in tree) != simplifies_framework
    for name in ("trace_view.json", "kernel_details.csv", "op_statistic.csv"):
        assert f"{output}/{name}" in tree
    session = os.path.join(dump["out"], dump["session"])
    assert deliverables.check_ascend_dir(session, ("text",)) == []


def test_the_log_lines_are_in_the_release_s_format(release):
    if ANALYSIS + "prof_common_func/_log.py" not in release._files:
        pytest.skip(f"torch_npu {release.version} keeps no parse log")
    real = release._class(ANALYSIS + "prof_common_func/_log.py", "ProfilerLogger")
    with open(os.path.join(STANDIN, "torch_npu", "profiler", "analysis", "prof_common_func", "_log.py")) as handle:
        ours = next(n for n in ast.parse(handle.read()).body if isinstance(n, ast.ClassDef))
    for name in ("LOG_FORMAT", "DATE_FORMAT", "DEFAULT_LOGGER_NAME", "DEFAULT_LOG_DIR", "MAX_BYTES", "BACKUP_COUNT"):
        assert _literal(ours, name) == _literal(real, name), name


def _literal(cls: ast.ClassDef, name: str):
    """A class attribute: a literal, or arithmetic on literals (10 * 1024 * 1024)."""
    for node in cls.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return eval(compile(ast.Expression(node.value), name, "eval"), {"__builtins__": {}})  # noqa: S307
    raise AssertionError(f"{cls.name} has no {name}")


def test_the_parse_steps_are_the_release_s(release, tmp_path_factory):
    """tensorboard_trace_handler's steps per export type in prof_config/_parser_config.py, and those
    _parser_deps_config.py runs in a process of their own (ConcurrentMode.SUB_PROCESS)."""
    dump = standin(release, tmp_path_factory, ranked=False)
    config = release._class(ANALYSIS + "prof_config/_parser_config.py", "ParserConfig")
    deps = release._class(ANALYSIS + "prof_config/_parser_deps_config.py", "ParserDepsConfig")
    names = {}
    for node in config.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "PARSER_NAME_MAP":
            names = {key.id: value.attr for key, value in zip(node.value.keys, node.value.values)}
    sub_process = set()
    for node in deps.body:
        if isinstance(node, ast.Assign):
            for key, value in zip(node.value.keys, node.value.values):
                modes = [ast.unparse(v) for k, v in zip(value.keys, value.values) if ast.unparse(k) == "Constant.MODE"]
                if modes and "SUB_PROCESS" in modes[0]:
                    sub_process |= {cls for cls, attr in names.items() if attr == key.attr}
    for node in config.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in dump["parsers"]:
            real = {}
            for export, handlers in zip(node.value.keys, node.value.values):
                for handler, steps in zip(handlers.keys, handlers.values):
                    if handler.attr == "TENSORBOARD_TRACE_HANDLER":
                        real[release.constants[export.attr]] = [step.id for step in steps.elts]
            assert dump["parsers"][node.targets[0].id] == real, node.targets[0].id
    assert set(dump["sub_process"]) == sub_process


# -- names, headers, constants -------------------------------------------------------------------


def test_the_standin_s_constants_are_the_release_s(release, tmp_path_factory):
    dump = standin(release, tmp_path_factory, ranked=False)
    for name, value in dump["constants"].items():
        assert name in release.constants, f"torch_npu {release.version} has no Constant.{name}"
        if release.constants[name] != UNKNOWN:
            assert value == release.constants[name], name


def _class_list(release: ReleaseSource, file: str, cls_name: str, name: str) -> list:
    cls = release._class(ANALYSIS + file, cls_name)
    for node in cls.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{cls_name}.{name} not found")


def test_the_files_a_parse_writes_have_the_release_s_names_and_columns(release):
    """The writer of ASCEND_PROFILER_OUTPUT/ (tests/npu_layout.output_files): file names, CSV
    headers, the db name per rank, and the keys of a trace event."""
    out = npu_layout.output_files
    views = ANALYSIS + "prof_view/"
    assert (
        _class_list(release, "prof_common_func/_csv_headers.py", "CsvHeaders", "OP_SUMMARY_KERNEL_BASE_HEADERS")
        == (out.KERNEL_BASE_HEADERS[release.version])
    )
    kernel_view = release._files[views + "_kernel_view_parser.py"]
    assert '["Step Id"] + output_headers' in kernel_view and out.KERNEL_HEADER[0] == "Step Id"
    assert f'KERNEL_VIEW = "{out.KERNEL_DETAILS}"' in kernel_view
    assert _class_list(release, "prof_view/_operator_view_parser.py", "OperatorViewParser", "OPERATOR_HEADERS") == (
        out.OPERATOR_DETAILS_HEADER
    )
    assert (
        _class_list(release, "prof_view/_trace_step_time_parser.py", "TraceStepTimeParser", "title")
        == (out.STEP_TRACE_TIME_HEADERS[release.version])
    )
    assert (
        _class_list(release, "prof_bean/_op_statistic_bean.py", "OpStatisticBean", "HEADERS")
        == (out.OP_STATISTIC_HEADER[1:])
    ), "CANN's op_statistic columns, after Device_id"
    assert f'CANNDataEnum.OP_STATISTIC: "{out.OP_STATISTIC}"' in release._files[views + "_integrate_parser.py"]
    assert f'TRACE_VIEW = "{out.TRACE_VIEW}"' in release._files[views + "_trace_view_parser.py"]
    db_parser = release._files[views + "prof_db_parse/_db_parser.py"]
    assert 'f"ascend_pytorch_profiler_{ProfilerConfig().rank_id}.db"' in db_parser
    assert (
        "DB_ASCEND_PYTORCH_PROFILER = " + repr(out.db_name(-1)).replace("'", '"')
        in release._files[ANALYSIS + "prof_common_func/_constant.py"]
    )
    assert out.db_name("3") == "ascend_pytorch_profiler_3.db"
    manager = release._files[ANALYSIS + "prof_common_func/_trace_event_manager.py"]  # create_x_event
    keys = re.search(r'return \{"ph": "X", (.*?)\}', manager, re.S).group(1)
    assert re.findall(r'"(\w+)":', '"ph": "X", ' + keys) == list(out._x("op", 1, 2, 1_000, 2_000))


def test_the_op_statistic_level_rule_is_the_release_s(release):
    """op_statistic.csv is copied at Level1 and Level2 only (ProfilerConfig.LEVEL_PARSER_CONFIG):
    the stand-in's parse writes it at those levels only."""
    cls = release._class(ANALYSIS + "_profiler_config.py", "ProfilerConfig")
    table = next(n for n in cls.body if isinstance(n, ast.Assign) and n.targets[0].id == "LEVEL_PARSER_CONFIG")
    with_statistic = {
        release.constants[key.attr]
        for key, value in zip(table.value.keys, table.value.values)
        if "CANNDataEnum.OP_STATISTIC" in ast.unparse(value)
    }
    assert with_statistic == {"Level1", "Level2"}
    with open(os.path.join(STANDIN, "torch_npu", "profiler", "analysis", "_profiling_parser.py")) as handle:
        assert "window.level in (Constant.LEVEL1, Constant.LEVEL2)" in handle.read()
