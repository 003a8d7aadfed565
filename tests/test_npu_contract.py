"""What the npu backend passes, checked against the sources of real torch_npu releases.

For each release the wheel is fetched once (see npu_wheels.py) and read with ``ast``; master's 2.15,
not on PyPI, is read from the extract checked in under tests/npu_sources. The backend's
own version logic is driven with that release's version string, and every keyword, required
argument, list-typed value and constant it would use must exist in that release. The per-version
table must agree with the sources exactly, and the recording stand-in must have the signatures of
the releases it imitates.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess

import pytest
from jobs import PYTHON, ROOT, clean_env
from npu_wheels import (
    CONSTANT_CLASSES,
    DEFINITIONS,
    MSPTI_BOUNDARY,
    RELEASES,
    SOURCE_DIRS,
    UNKNOWN,
    ReleaseSource,
    release_source,
)

from npuprof_launch.common import options
from npuprof_launch.inprocess.backends import npu

STANDIN = os.path.join(ROOT, "tests", "standin")


@pytest.fixture(scope="session", params=RELEASES)
def release(request) -> ReleaseSource:
    """One real release's sources; the wheel is downloaded once and kept in the cache."""
    return release_source(request.param)


def config(**given: str) -> options.Config:
    """A configuration as the launcher would resolve it from these flags (no environment)."""
    resolved, problems = options.resolve({name.replace("_", "-"): value for name, value in given.items()}, {})
    assert not problems, problems
    return resolved


EVERYTHING = {
    "level": "level2",
    "aic_metrics": "MemoryAccess",
    "export_type": "text,db",
    "activities": "cpu",
    "l2_cache": "1",
    "data_simplification": "0",
    "analyse": "0",
    "async_mode": "1",
    "mstx": "1",
    "host_sys": ",".join(options.HOST_SYS),
    "sys_io": "1",
    "sys_interconnection": "1",
    "op_attr": "1",
    "record_op_args": "1",
    "gc_detect_threshold": "2.5",
    "record_shapes": "1",
    "profile_memory": "1",
    "with_stack": "1",
    "with_modules": "1",
    "with_flops": "1",
    "wait": "1",
    "warmup": "1",
    "active": "2",
    "repeat": "2",
}


def configurations() -> list[options.Config]:
    """The defaults, everything on at once, and each level, AI Core metric and host_sys item alone."""
    variants = [config(), config(**EVERYTHING), config(export_type="db", op_attr="1")]
    variants += [config(level=level) for level in options.LEVELS]
    variants += [config(level="level1", aic_metrics=metric) for metric in options.AIC_METRICS]
    variants += [config(host_sys=item) for item in options.HOST_SYS]
    return variants


def violations(release: ReleaseSource, api: str, kwargs: dict) -> list[str]:
    """Why these keywords would not be accepted by ``api`` of this release (empty when they would)."""
    parameters = release.parameters(api)
    problems = [f"{api}({name}=) does not exist" for name in kwargs if name not in parameters]
    problems += [
        f"{api}: required {name} is not passed"
        for name, parameter in parameters.items()
        if parameter.default == "<required>" and name not in kwargs
    ]
    for name, value in kwargs.items():
        if isinstance(value, list) and name == "export_type" and "list" not in parameters[name].annotation:
            problems.append(f"{api}({name}=) takes no list here ({parameters[name].annotation})")
        for member in _members(value):
            problems.extend(_member_problem(release, member))
    return problems


def _members(value) -> list[npu.Member]:
    if isinstance(value, npu.Member):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, npu.Member)]
    return []


def _member_problem(release: ReleaseSource, member: npu.Member) -> list[str]:
    if member.owner == "ProfilerActivity":  # a C++ enum: its members are those the Python sources use
        found = release.references(f"ProfilerActivity.{member.name}")
    else:
        found = member.name in (release.members(member.owner) or {})
    return [] if found else [f"{member.owner}.{member.name} does not exist"]


def test_every_plan_uses_only_what_the_release_defines(release):
    caps = npu.capabilities(release.version)
    problems = []
    for variant in configurations():
        plan = npu.plan(variant, release.version, caps, "/data/out", "host_rank0_pid1")
        for api, kwargs in (
            ("profile", plan.profile),
            ("schedule", plan.schedule),
            ("tensorboard_trace_handler", plan.handler),
            ("_ExperimentalConfig", plan.experimental),
        ):
            problems += [f"{problem} (options {variant.as_dict()})" for problem in violations(release, api, kwargs)]
    assert not problems, f"torch_npu {release.version}:\n" + "\n".join(sorted(set(problems)))


@pytest.mark.parametrize("export_types", [None, ("text",), ("db",), ("text", "db")])
def test_offline_analyse_call_fits_therelease_source(release, export_types):
    kwargs, notes = npu.analyse_call("/data/out", export_types, release.version, npu.capabilities(release.version))
    assert violations(release, "profiler.analyse", kwargs) == []
    if export_types and "export_type" not in kwargs:
        assert notes and release.version in notes[0]


@pytest.mark.parametrize("feature", npu.FEATURES, ids=lambda feature: feature.name)
def test_the_version_table_agrees_with_the_sources(release, feature):
    if feature.kind == "member":
        in_sources = feature.attr in (release.members(feature.owner) or {})
    else:
        parameter = release.parameters(feature.owner).get(feature.attr)
        in_sources = parameter is not None and feature.mentions in parameter.annotation
    assert npu.has_feature(feature, release.version) == in_sources, (
        f"FEATURES says {feature.name} is {'present' if not in_sources else 'absent'} in torch_npu "
        f"{release.version}, its sources say otherwise"
    )


def test_left_out_keywords_have_the_defaults_we_assume(release):
    parameters = release.parameters("_ExperimentalConfig")
    for name, assumed in npu.TORCH_NPU_DEFAULTS.items():
        if name in parameters:
            assert parameters[name].default == assumed, (
                f"{name}: torch_npu {release.version} defaults to {parameters[name].default!r}, "
                f"the backend leaves it out when it is {assumed!r}"
            )
    for name in ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"):
        assert release.parameters("profile")[name].default is False


def test_old_releases_get_one_warning_per_missing_option():
    everything = config(**EVERYTHING)
    plan = npu.plan(everything, "2.4.0", npu.capabilities("2.4.0"), "/data/out", "w")
    for flag in ("--async-mode", "--host-sys", "--sys-io", "--sys-interconnection", "--export-type text,db"):
        (note,) = [note for note in plan.notes if note.startswith(flag + ":")]
        assert "torch_npu 2.4.0" in note
    assert "async_mode" not in plan.handler and "host_sys" not in plan.experimental
    assert plan.experimental["export_type"] == npu.Member("ExportType", "Text")
    assert "aic_metrics" not in plan.experimental  # MemoryAccess is unknown there: torch_npu's default applies
    assert plan.experimental["msprof_tx"] is True and "mstx" not in plan.experimental


#: The session's own: each window gets a profiler of its own, so no release sees them.
SESSIONS_OWN = ("wait", "repeat")


def test_newest_release_takes_every_option():
    """On the newest release (master's 2.15) no option is dropped: each one changes the calls (but
    the session's own)."""
    newest = RELEASES[-1]
    caps = npu.capabilities(newest)
    base = npu.plan(config(), newest, caps, "/o", "w")
    assert base.notes == []
    assert npu.plan(config(wait="3", repeat="2"), newest, caps, "/o", "w").schedule == base.schedule
    for name, value in EVERYTHING.items():
        if name in SESSIONS_OWN:
            continue
        level = {"level": "level1"} if name == "aic_metrics" else {}  # AI Core metrics need level1+
        before = npu.plan(config(**level), newest, caps, "/o", "w")
        changed = npu.plan(config(**level, **{name: value}), newest, caps, "/o", "w")
        assert changed[:4] != before[:4], f"--{name.replace('_', '-')} {value} does not reach torch_npu"
    full = npu.plan(config(**EVERYTHING), newest, caps, "/o", "w")
    assert [note for note in full.notes if "torch_npu" in note and newest in note] == []


# -- the recording stand-in has the API of the releases it imitates ------------------------------

DUMP = """
import enum, inspect, json
import torch_npu
from torch_npu import profiler
from torch_npu.profiler import profiler as module

def parameters(obj):
    out = {}
    for name, p in inspect.signature(obj).parameters.items():
        default = "<required>" if p.default is p.empty else p.default
        if not isinstance(default, (str, int, float, bool, type(None))):
            default = repr(default)
        out[name] = [p.kind.name.lower(), default, str(p.annotation)]
    return out

def members(cls):
    if cls is None:
        return None
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        return {m.name: m.value for m in cls}
    return {k: v for k, v in vars(cls).items() if not k.startswith("_")}

apis = {"profile": profiler.profile, "schedule": profiler.schedule, "profiler.analyse": module.analyse,
        "tensorboard_trace_handler": profiler.tensorboard_trace_handler,
        "_ExperimentalConfig": profiler._ExperimentalConfig}
print(json.dumps({
    "version": torch_npu.__version__,
    "apis": {name: parameters(obj) for name, obj in apis.items()},
    "classes": {name: members(getattr(profiler, name, None)) for name in %r},
    "all": list(profiler.__all__),
    "activities": [a.name for a in profiler.ProfilerActivity],
}))
"""


@pytest.mark.parametrize("version", ["2.14.0", "2.4.0"])
def test_the_standin_has_the_api_of_the_release_it_imitates(version):
    real = release_source(version)
    env = clean_env(PYTHONPATH=STANDIN, TORCH_NPU_STANDIN_VERSION=version)
    result = subprocess.run(
        [PYTHON, "-c", DUMP % (list(CONSTANT_CLASSES),)], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    standin = json.loads(result.stdout)
    assert standin["version"] == version
    for api, parameters in standin["apis"].items():
        expected = real.parameters(api)
        assert list(parameters) == list(expected), f"{api}: parameter names or order differ"
        for name, (kind, default, annotation) in parameters.items():
            assert kind == expected[name].kind, f"{api}({name}): {kind} != {expected[name].kind}"
            if expected[name].default != UNKNOWN:
                assert default == expected[name].default, f"{api}({name}=) default differs"
            assert ("list" in annotation) == ("list" in expected[name].annotation), f"{api}({name}) list-ness"
    for cls, members in standin["classes"].items():
        assert members == real.members(cls), f"{cls} differs from torch_npu {version}"
    assert standin["all"] == real.exports(), "torch_npu.profiler.__all__ differs"
    assert all(real.references(f"ProfilerActivity.{name}") for name in standin["activities"])


PROBE = (
    "import json, torch_npu; from npuprof_launch.inprocess.backends import npu; "
    "print(json.dumps(sorted(npu.capabilities(%r, torch_npu.profiler))))"
)


@pytest.mark.parametrize(("imitated", "claimed"), [("2.14.0", "2.2.0"), ("2.4.0", "2.14.0")])
def test_the_installed_code_outranks_the_table(imitated, claimed):
    """A build with a backport the table does not know (or without one it expects) is judged by its
    signatures and constants: the stand-in of ``imitated`` claiming to be ``claimed``."""
    assert npu.capabilities(claimed) != npu.capabilities(imitated), (
        "the table must disagree for this test to mean anything"
    )
    env = clean_env(PYTHONPATH=os.pathsep.join([STANDIN, ROOT]), TORCH_NPU_STANDIN_VERSION=imitated)
    result = subprocess.run([PYTHON, "-c", PROBE % claimed], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) == set(npu.capabilities(imitated))


def test_the_message_functions_we_watch_are_where_the_release_defines_them(release):
    """The backend counts torch_npu's errors by wrapping these print functions: each release must
    define them, at module level, in the module the backend imports, and use them."""
    home = npu.MESSAGES_MODULE.replace(".", "/") + ".py"
    defined = {node.name for node in release._tree(home).body if isinstance(node, ast.FunctionDef)}
    assert set(npu.MESSAGE_FUNCTIONS) <= defined, f"{release.version}: {home} defines {sorted(defined)}"
    for name in npu.MESSAGE_FUNCTIONS:
        assert release.references(name + "("), f"{release.version}: nothing calls {name}"
    assert release.references(npu.OWN_WARNINGS[0]), f"{release.version}: the warning we skip is not printed"


# -- the checked-in sources of releases not on PyPI ---------------------------------------------


@pytest.mark.parametrize("version", sorted(SOURCE_DIRS))
def test_checked_in_sources_are_whole_and_say_where_they_came_from(version):
    """What the contract tests read is there, with the upstream licence and the commit it came from."""
    folder = SOURCE_DIRS[version]
    with open(os.path.join(folder, "README.md")) as handle:
        readme = handle.read()
    assert version.split("+git")[-1] in readme, "the README names the commit the files came from"
    with open(os.path.join(folder, "LICENSE")) as handle:
        assert "Redistribution and use in source and binary forms" in handle.read()
    release = ReleaseSource(version, folder)
    assert not release.is_wheel
    for api in DEFINITIONS:
        assert release.parameters(api), api
    for cls in CONSTANT_CLASSES:
        assert release.members(cls), cls
    assert release.exports() and release.constants


# -- torch_npu's msPTI profiler for plain torch.profiler (the torch backend's --activities npu) ---


@pytest.mark.parametrize("version", [*RELEASES, *MSPTI_BOUNDARY])
def test_the_mspti_table_agrees_with_the_sources(version):
    """npu.MSPTI_PROFILER says which releases register an msPTI profiler for PrivateUse1; each
    release's own files must agree (the header the torch backend looks for, and the compiled
    registration), and every release renames PrivateUse1 to npu."""
    facts = release_source(version).mspti()
    assert facts["npu_backend"], f"torch_npu {version} does not rename PrivateUse1 to npu"
    in_sources = facts["header"] and facts["registered"]
    assert facts["header"] == facts["registered"], f"torch_npu {version}: {facts}"
    assert npu.has_feature(npu.MSPTI_PROFILER, version) == in_sources, (
        f"MSPTI_PROFILER says torch_npu {version} {'lacks' if in_sources else 'has'} the msPTI profiler; "
        f"its files say {facts}"
    )
    if in_sources:
        assert facts["libmspti"], f"torch_npu {version} no longer gates on $ASCEND_HOME_PATH/lib64/libmspti.so"


def test_2_14_registers_its_mspti_profiler_for_privateuse1():
    """What --backend torch --activities cpu,npu relies on, in the newest release on PyPI: the
    header under the installed package (torch.py looks for MSPTI_PROFILER.owner), the profiler
    compiled into libtorch_npu.so, its libmspti.so condition, and the rename to npu."""
    release = release_source("2.14.0")
    assert release.read("torch_npu/" + npu.MSPTI_PROFILER.owner) is not None
    assert npu.MSPTI_PROFILER.attr.encode() in release.read("torch_npu/" + npu.MSPTI_PROFILER.owner)
    assert release.mspti() == {"header": True, "registered": True, "libmspti": True, "npu_backend": True}


# -- the step ranges: ProfilerStep#N numbered by the job, and the open one left out of a cut window --


def _profile_methods(release: ReleaseSource) -> dict[str, str]:
    """The methods of the release's ``torch_npu.profiler.profile``, each as normalized source."""
    cls = release._class("torch_npu/profiler/profiler.py", "profile")
    assert cls is not None, f"{release.version}: no profile class"
    return {node.name: ast.unparse(node) for node in cls.body if isinstance(node, ast.FunctionDef)}


def _has_step_offset(release: ReleaseSource) -> bool:
    return f"self.{npu.STEP_OFFSET} = 0" in _profile_methods(release)["__init__"]


def test_the_step_counter_and_range_the_backend_sets_are_the_releases(release):
    """npu.count_from sets ``_step_num_offset`` (where it exists) before ``start()``, and
    NpuBackend.stop puts ``step_rec_fn`` aside for a window cut short. So in each release: both
    are attributes of the profile set in ``__init__``; start() and step() name the open step
    ``ProfilerStep#`` + step_num (+ the offset), which only names it (the schedule reads step_num
    alone); stop() ends the open range only when ``step_rec_fn`` is set. The offset came in
    2.6.0: 2.1.0.post8 and 2.4.0 keep their own numbering."""
    methods = _profile_methods(release)
    offset = f"self.{npu.STEP_OFFSET}"
    has_offset = _has_step_offset(release)
    name = f"'ProfilerStep#' + str(self.step_num + {offset})" if has_offset else "'ProfilerStep#' + str(self.step_num)"
    assert f"self.{npu.STEP_RANGE}" in methods["__init__"], release.version
    for method in ("start", "step"):
        assert name in methods[method], f"{release.version}: {method}() names its steps otherwise"
        if has_offset:
            assert methods[method].count(offset) == methods[method].count(name), f"{release.version}: {method}()"
    assert "self.schedule(self.step_num)" in methods["step"], release.version
    assert f"if self.record_steps and self.{npu.STEP_RANGE}:" in methods["stop"], release.version
    assert has_offset == (npu.parse_version(release.version) >= (2, 6, 0, 0)), release.version


STEP_PROBE = (
    "import torch_npu.profiler as p; prof = p.profile(schedule=p.schedule(wait=0, active=2)); "
    "print(hasattr(prof, %r), hasattr(prof, %r))"
)


@pytest.mark.parametrize("version", ["2.14.0", "2.4.0"])
def test_the_standin_has_the_step_counter_of_the_release_it_imitates(version):
    real = release_source(version)
    env = clean_env(PYTHONPATH=STANDIN, TORCH_NPU_STANDIN_VERSION=version)
    probe = STEP_PROBE % (npu.STEP_OFFSET, npu.STEP_RANGE)
    result = subprocess.run([PYTHON, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == [str(_has_step_offset(real)), "True"]
