"""``--backend torch --activities cpu,npu``, NPU kernels through plain torch.profiler.

torch_npu 2.12.0.post3 and 2.13+ register an msPTI profiler with libkineto for
ProfilerActivity.PrivateUse1 (tests/test_npu_contract.py checks that in the wheels' files). The torch
backend passes PrivateUse1 only when everything that profiler needs holds in the job's process, and
otherwise leaves it out with one warning naming what is missing. The conditions are driven here
in-process with stand-ins for torch_npu and torch.profiler, then the whole path runs with the
recording torch_npu stand-in, which makes the real torch list PrivateUse1 as torch_npu does.
"""

from __future__ import annotations

import os
import sys
import types

import pytest
from answers import check_json
from jobs import PYTHON, assert_ok, npuprof, script
from npu_standin import calls, standin_env
from outputs import status_records, torch_traces

from npuprof_launch.inprocess.backends import npu
from npuprof_launch.inprocess.backends import torch as torch_backend

TRAIN_ON_NPU = script("train_on_npu.py")
HEADER = npu.MSPTI_PROFILER.owner


class Activity:
    CPU = "CPU"
    CUDA = "CUDA"
    PrivateUse1 = "PrivateUse1"


def profiler_module(activity=Activity, listed=("CPU", "PrivateUse1")):
    return types.SimpleNamespace(ProfilerActivity=activity, supported_activities=lambda: set(listed))


def installed_torch_npu(folder, version: str = "2.14.0", header: bool | None = True, npu_present: bool = True):
    """A torch_npu as the job would have imported it: ``header`` None means no include/ at all."""
    package = folder / "torch_npu"
    package.mkdir()
    if header is not None:
        (package / "include").mkdir()
    if header:
        path = package.joinpath(*HEADER.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("class MsptiActivityProfilerPoc;\n")
    module = types.ModuleType("torch_npu")
    module.__file__ = str(package / "__init__.py")
    module.__version__ = version
    module.npu = types.SimpleNamespace(is_available=lambda: npu_present)
    return module


def cann(folder, library: bool = True) -> str:
    lib64 = folder / "cann" / "lib64"
    lib64.mkdir(parents=True)
    if library:
        (lib64 / "libmspti.so").write_bytes(b"")
    return str(folder / "cann")


@pytest.fixture
def job(tmp_path, monkeypatch):
    """Install a torch_npu into sys.modules; returns the environment the conditions are read from."""

    def make(**kwargs):
        monkeypatch.setitem(sys.modules, "torch_npu", installed_torch_npu(tmp_path, **kwargs))
        home = cann(tmp_path)
        return {"ASCEND_HOME_PATH": home, "LD_LIBRARY_PATH": os.path.join(home, "lib64")}

    return make


def test_privateuse1_when_everything_holds(job):
    assert torch_backend.npu_activity(profiler_module(), job()) == ("PrivateUse1", "")


def test_the_installed_header_outranks_the_version_table(job):
    """A 2.12.0 build with the header (a backport) gets it; a 2.14.0 build without it does not."""
    assert torch_backend.npu_activity(profiler_module(), job(version="2.12.0"))[0] == "PrivateUse1"


def test_no_header_in_a_new_release_means_no_profiler(job):
    found, why = torch_backend.npu_activity(profiler_module(), job(version="2.14.0", header=False))
    assert found is None and "torch_npu 2.14.0 has no msPTI profiler" in why


@pytest.mark.parametrize(("version", "present"), [("2.12.0.post2", False), ("2.12.0.post3", True), ("2.9.0", False)])
def test_without_include_the_version_table_decides(job, version, present):
    found, why = torch_backend.npu_activity(profiler_module(), job(version=version, header=None))
    assert (found == "PrivateUse1") is present, why
    if not present:
        came = "(it came in 2.12.0.post3 or 2.13.0)"
        assert why == f"torch_npu {version} has no msPTI profiler for torch.profiler {came}"


def test_torch_npu_not_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    found, why = torch_backend.npu_activity(profiler_module(), {})
    assert found is None and "has not imported torch_npu" in why


def test_no_npu_device(job):
    found, why = torch_backend.npu_activity(profiler_module(), job(npu_present=False))
    assert found is None and why == "torch_npu sees no NPU in this process"


def test_a_torch_without_privateuse1(job):
    """The fallback for a torch whose ProfilerActivity lacks PrivateUse1 (every supported one has it)."""

    class Old:
        CPU = "CPU"

    found, why = torch_backend.npu_activity(profiler_module(activity=Old), job())
    assert (found, why) == (None, "this torch's ProfilerActivity has no PrivateUse1")


def test_privateuse1_not_listed_by_torch(job):
    found, why = torch_backend.npu_activity(profiler_module(listed=("CPU",)), job())
    assert found is None and "supported_activities() does not list PrivateUse1" in why


def test_supported_activities_raising_is_not_a_guess(job):
    module = profiler_module()
    module.supported_activities = lambda: 1 / 0
    assert torch_backend.npu_activity(module, job())[0] is None


def test_ascend_home_path_unset(job):
    environ = job()
    del environ["ASCEND_HOME_PATH"]
    found, why = torch_backend.npu_activity(profiler_module(), environ)
    assert found is None and why.startswith("ASCEND_HOME_PATH is not set")


def test_libmspti_missing(job):
    environ = job()
    os.remove(os.path.join(environ["ASCEND_HOME_PATH"], "lib64", "libmspti.so"))
    found, why = torch_backend.npu_activity(profiler_module(), environ)
    assert found is None and why.startswith(os.path.join(environ["ASCEND_HOME_PATH"], "lib64", "libmspti.so"))
    assert "does not exist" in why


def test_libmspti_not_on_the_loader_path(job, monkeypatch):
    environ = job()
    environ["LD_LIBRARY_PATH"] = ""

    def no_such_library(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr("ctypes.CDLL", no_such_library)
    found, why = torch_backend.npu_activity(profiler_module(), environ)
    assert found is None and "is not on LD_LIBRARY_PATH" in why and "libmspti.so" in why


def test_activities_leaves_npu_out_with_one_warning(job, monkeypatch):
    job()
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    warnings = []
    backend = torch_backend.TorchBackend(warnings.append)
    config = types.SimpleNamespace(activities=("cpu", "npu"))
    assert backend.activities(config, profiler_module(), cuda_available=False) == ["CPU"]
    (warning,) = warnings
    assert warning.startswith("--activities npu: ASCEND_HOME_PATH is not set") and warning.endswith("; left out")


# -- the whole path, with the recording stand-in ----------------------------------------------------


def run(tmp_path, **env):
    out = str(tmp_path / "out")
    record = str(tmp_path / "calls.jsonl")
    flags = ["--backend", "torch", "--activities", "cpu,npu", "--active", "2"]
    job_env = standin_env(record, TORCH_NPU_STANDIN_PRIVATEUSE1="1", **env)
    result = npuprof(["--output-dir", out, *flags, "--", PYTHON, TRAIN_ON_NPU, "--steps", "4"], env=job_env)
    return result, out, record


def test_npu_activity_reaches_torch_profiler(tmp_path):
    """All conditions hold: the profile traces PrivateUse1 (torch calls torch.npu.synchronize() when
    it ends), no warning, a trace, --check passes."""
    home = cann(tmp_path)
    result, out, record = run(tmp_path, ASCEND_HOME_PATH=home, LD_LIBRARY_PATH=os.path.join(home, "lib64"))
    assert_ok(result)
    (status,) = status_records(out)
    assert status["backend"] == "torch" and status["warnings"] == [], status["warnings"]
    assert [c["backend"] for c in calls(record, "register_privateuse1")] == ["npu"]
    assert calls(record, "synchronize"), "the profile did not trace ProfilerActivity.PrivateUse1"
    assert torch_traces(out)
    code, report = check_json(out)
    assert code == 0 and report["passed"] is True, report


def test_npu_activity_left_out_without_cann(tmp_path):
    """No ASCEND_HOME_PATH: the CPU is traced alone, and one warning says why."""
    result, out, record = run(tmp_path, ASCEND_HOME_PATH="")
    assert_ok(result)
    (status,) = status_records(out)
    (warning,) = [w for w in status["warnings"] if w.startswith("--activities npu:")]
    assert "ASCEND_HOME_PATH is not set" in warning
    assert "--activities npu: ASCEND_HOME_PATH is not set" in result.stderr
    assert calls(record, "synchronize") == [], "PrivateUse1 was traced although left out"
    assert torch_traces(out)
