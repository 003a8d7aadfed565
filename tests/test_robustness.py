"""Never break the job. Each test checks both halves: the job is unchanged, and we said what happened."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Sequence

import pytest
from compare import profiled_against_bare
from jobs import PYTHON, ROOT, assert_ok, clean_env, npuprof, python, script
from outputs import status_records, step_counts, torch_traces

from npuprof_launch.launcher import launch

TRAIN = script("train_loop.py")
FAKES = os.path.join(ROOT, "tests", "fakes")


def job(*extra: str) -> list[str]:
    return [sys.executable, TRAIN, "--steps", "8", *extra]


def against_bare(job_args: list[str], options: Sequence[str] = (), **kwargs) -> subprocess.CompletedProcess:
    """The profiled run of ``python JOB_ARGS`` (a fault injected, the job wrapped), whose stdout must
    be the bare ``train_loop.py --steps 8``'s: whatever happened to the profiler, the job's results
    are its own. ``kwargs`` go to ``profiled_against_bare``."""
    return profiled_against_bare(job_args, options, bare_job=job()[1:], **kwargs).profiled


# -- 1. bad options are refused before the command starts ---------------------------------------

BAD_OPTIONS = [
    (["--active", "abc"], "--active='abc'"),
    (["--active", "0"], "--active='0'"),
    (["--active", "-1"], "--active='-1'"),
    (["--skip-first", "-2"], "--skip-first='-2'"),
    (["--repeat", "0"], "--repeat='0'"),
    (["--ranks", "1-"], "--ranks='1-'"),
    (["--ranks", "3-1"], "--ranks='3-1'"),
    (["--ranks", "a,b"], "--ranks='a,b'"),
    (["--backend", "tpu"], "--backend='tpu'"),
    (["--level", "level9"], "--level='level9'"),
    (["--export-type", "csv"], "--export-type='csv'"),
    (["--aic-metrics", "Everything"], "--aic-metrics='Everything'"),
    (["--record-shapes=maybe"], None),
    (["--skip-first", "5", "--active", "10", "--total-steps", "12"], "--total-steps is 12"),
]


@pytest.mark.parametrize(("args", "named"), BAD_OPTIONS)
def test_bad_option_exits_2_before_starting(tmp_path, args, named):
    marker = tmp_path / "started"
    result = npuprof(
        [*args, "--output-dir", str(tmp_path / "o"), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npuprof: "), result.stderr
    if named:
        assert named in lines[0]
    assert not marker.exists(), "the command must not start"


def test_bad_variable_is_named_when_it_comes_from_the_environment(tmp_path):
    result = npuprof(
        ["--output-dir", str(tmp_path / "o"), "--", sys.executable, "-c", "pass"], env=clean_env(NPU_PROF_WARMUP="many")
    )
    assert result.returncode == 2
    assert result.stderr.startswith("npuprof: NPU_PROF_WARMUP='many': expected a whole number")


def test_uncreatable_output_dir_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = npuprof(["--output-dir", str(blocker / "out"), "--", sys.executable, "-c", "pass"])
    assert result.returncode == 2
    assert result.stderr.startswith("npuprof: --output-dir") and "cannot be created" in result.stderr


def test_missing_command_exits_2(tmp_path):
    result = npuprof(["--output-dir", str(tmp_path / "o"), "--", "no-such-command-npuprof"])
    assert result.returncode == 2
    assert result.stderr.strip() == "npuprof: command 'no-such-command-npuprof': not found on PATH"


# -- 2. env-only mode: a bad value warns and the job runs unprofiled -----------------------------


def hooked_env(**variables: str) -> dict[str, str]:
    return clean_env(NPU_PROF_ENABLE="1", PYTHONPATH=launch.HOOK_DIR, **variables)


@pytest.mark.xdist_group("robustness")
def test_env_only_bad_value_warns_and_runs_unprofiled(tmp_path):
    out = tmp_path / "o"
    env = hooked_env(NPU_PROF_ACTIVE="abc", NPU_PROF_OUTPUT_DIR=str(out))
    result = against_bare(job()[1:], profiled=lambda: python(job()[1:], env=env))
    warnings = [line for line in result.stderr.splitlines() if line.startswith("npuprof:")]
    assert warnings == ["npuprof: NPU_PROF_ACTIVE='abc': expected a whole number >= 1; this process runs unprofiled"]
    assert torch_traces(str(out)) == []


@pytest.mark.xdist_group("robustness")
def test_env_only_unwritable_output_dir_warns_and_runs_unprofiled(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    env = hooked_env(NPU_PROF_OUTPUT_DIR=str(blocker / "out"))
    result = against_bare(job()[1:], profiled=lambda: python(job()[1:], env=env))
    warnings = [line for line in result.stderr.splitlines() if line.startswith("npuprof:")]
    assert len(warnings) == 1 and "NPU_PROF_OUTPUT_DIR" in warnings[0] and "unprofiled" in warnings[0]


# -- 3. faults at run time ------------------------------------------------------------------------


@pytest.mark.xdist_group("robustness")
@pytest.mark.parametrize("method", ["start", "step", "stop", "export_chrome_trace"])
def test_profiler_fault_is_reported_and_the_job_goes_on(out, method):
    result = against_bare(job("--fault", method)[1:], ["--skip-first", "2", "--active", "3"], out=out)
    assert f"injected fault in profile.{method}" in result.stderr
    (record,) = status_records(out)
    assert record["steps"] == 8, "the clock keeps counting after a profiler failure"
    assert record["state"] == "failed"
    assert any(f"profile.{method}" in error for error in record["errors"])
    assert f"profile.{method}" in result.stderr.split("npuprof: problems:")[-1], "the report names the failure"


@pytest.mark.xdist_group("robustness")
def test_output_dir_replaced_by_a_file_during_the_run(out):
    result = against_bare(job("--break-output-at", "2")[1:], ["--skip-first", "4", "--active", "2"], out=out)
    assert "npuprof:" in result.stderr and "Not a directory" in result.stderr


@pytest.mark.xdist_group("robustness")
def test_output_dir_removed_during_the_run_is_recreated(out):
    against_bare(job("--remove-output-at", "2")[1:], ["--skip-first", "4", "--active", "2"], out=out)
    assert step_counts(out) == [2]


@pytest.mark.xdist_group("robustness")
def test_full_disk_while_exporting(out):
    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    def under_a_file_size_limit() -> subprocess.CompletedProcess:
        return subprocess.run(
            [PYTHON, "-m", "npuprof_launch", "--skip-first", "2", "--active", "3", "--output-dir", out, "--", *job()],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=small_files,
        )

    result = against_bare(job()[1:], out=out, profiled=under_a_file_size_limit)
    (record,) = status_records(out)
    assert record["state"] == "failed"
    assert any("wrote nothing" in error and "disk full" in error for error in record["errors"]), record["errors"]
    assert "disk full" in result.stderr
    left = [name for _, _, found in os.walk(out) for name in found if name.endswith(".tmp")]
    assert left == [], f"a failed export leaves no piece behind to hold the space: {left}"


@pytest.fixture
def small_filesystem(tmp_path):
    """A 256 KB tmpfs, where this test may mount one (root); the test is skipped elsewhere."""
    target = tmp_path / "small"
    target.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(target)]).returncode
    ):
        pytest.skip("mounting a small tmpfs needs root")
    yield str(target)
    subprocess.run(["umount", str(target)])


@pytest.mark.xdist_group("robustness")
def test_a_disk_the_job_filled_is_told_as_the_cause_not_its_effects(small_filesystem):
    """The job's own files fill the output's filesystem before its first step: no record, no trace
    can be written, and the report says the disk is full instead of "none imported torch"."""
    filler = os.path.join(small_filesystem, "job_checkpoint.bin")
    code = (
        f"import runpy, sys\ntry:\n    open({filler!r}, 'wb').write(b'x' * (1 << 20))\nexcept OSError:\n    pass\n"
        f"sys.argv = [{TRAIN!r}, '--steps', '8']\nrunpy.run_path({TRAIN!r}, run_name='__main__')\n"
    )
    out = os.path.join(small_filesystem, "out")
    result = against_bare(["-c", code], ["--skip-first", "2", "--active", "2"], out=out)
    problems = result.stderr.split("npuprof: problems:")[-1]
    assert problems.lstrip().startswith(f"- the filesystem of {out} is full"), result.stderr
    assert "none imported torch" not in problems and "could not build the report" not in result.stderr


def test_broken_torch_fails_our_hook_not_the_job(tmp_path):
    env = clean_env(PYTHONPATH=os.path.join(FAKES, "broken_torch"))
    code = "import torch; print('job ran')"
    result = profiled_against_bare(["-c", code], out=str(tmp_path / "o"), env=env).profiled  # both exit 0
    assert result.stdout == "job ran\n"
    assert "npuprof: post-import hook for torch failed" in result.stderr


def test_a_job_without_torch_runs_as_usual(tmp_path):
    env = clean_env(PYTHONPATH=os.path.join(FAKES, "no_torch"))
    code = "import sys\ntry:\n import torch\nexcept ImportError:\n print('no torch')\nsys.exit(4)"
    runs = profiled_against_bare(
        ["-c", code], out=str(tmp_path / "o"), env=env, ok=False, compare=("returncode", "stdout")
    )
    result = runs.profiled
    assert result.returncode == 4
    assert result.stdout == "no torch\n"
    assert "the command exited with status 4; 1 Python process loaded the hook, but none imported torch" in (
        result.stderr
    )


# -- 4. the user's own sitecustomize ------------------------------------------------------------


def test_user_sitecustomize_still_runs(tmp_path, out):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITE = 'loaded'\n")
    env = clean_env(PYTHONPATH=str(site))
    result = npuprof(["--output-dir", out, "--", sys.executable, "-c", "print(USER_SITE)"], env=env)
    assert_ok(result)
    assert result.stdout == "loaded\n"


def test_raising_user_sitecustomize_behaves_as_without_the_tool(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("raise RuntimeError('user site broke')\n")
    env = clean_env(PYTHONPATH=str(site))
    code = "import sys; print('main ran', 'sitecustomize' in sys.modules)"
    runs = profiled_against_bare(["-c", code], out=str(tmp_path / "o"), env=env)  # both exit 0, stdout the same
    expected = "Error in sitecustomize; set PYTHONVERBOSE for traceback:\nRuntimeError: user site broke\n"
    assert runs.bare.stderr == expected
    assert runs.profiled.stderr.startswith(expected)


# -- 5. signals -----------------------------------------------------------------------------------


def start_long_window(out: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            PYTHON,
            "-m",
            "npuprof_launch",
            "--skip-first",
            "2",
            "--active",
            "1000",
            "--output-dir",
            out,
            "--",
            sys.executable,
            TRAIN,
            "--steps",
            "2000",
            "--sleep",
            "0.01",
            "--announce",
            *extra,
        ],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_running(out: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in status_records(out):
            if record["state"] == "running" and record["steps"] >= 2:
                time.sleep(0.5)
                return record
        time.sleep(0.1)
    raise AssertionError("the window never opened")


def test_sigterm_to_the_launcher_flushes_the_window(out):
    launcher = start_long_window(out)
    wait_for_running(out)
    launcher.send_signal(signal.SIGTERM)
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 143, stderr
    (record,) = status_records(out)
    assert record["partial_traces"] == 1 and record["windows_completed"] == 0
    assert any("SIGTERM" in warning for warning in record["warnings"])
    (count,) = step_counts(out)
    assert count >= 1, "the recorded part of the window is on disk"
    assert "interrupted by SIGTERM at step" in stderr and "(partial)" in stderr


def bare_interrupt_status() -> int:
    """How the same job exits on this machine when SIGINT interrupts it bare, as the launcher reports it.

    Usually 130 (Python re-raises SIGINT after an unhandled KeyboardInterrupt), but it is the
    platform's to decide: with Python 3.12 and torch 2.11 on a GPU machine the bare job exits 1.
    """
    job = subprocess.Popen(
        [sys.executable, TRAIN, "--steps", "2000", "--sleep", "0.01", "--announce"],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in job.stderr:
        if line.startswith("step 3"):
            job.send_signal(signal.SIGINT)
            break
    job.communicate(timeout=120)
    return 128 + signal.SIGINT if job.returncode == -signal.SIGINT else job.returncode


def test_sigint_to_the_job_flushes_the_window_and_keeps_the_jobs_status(out):
    expected = bare_interrupt_status()
    launcher = start_long_window(out)
    record = wait_for_running(out)
    os.kill(record["pid"], signal.SIGINT)
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == expected, (
        f"the bare job's own status after SIGINT is {expected}, the launcher's {launcher.returncode}:\n{stderr[-3000:]}"
    )
    assert "KeyboardInterrupt" in stderr
    (record,) = status_records(out)
    assert record["partial_traces"] == 1
    assert step_counts(out) and step_counts(out)[0] >= 1


def test_a_hang_up_that_nohup_ignores_is_not_handed_to_the_job(out, tmp_path):
    """`nohup npuprof-run -- torchrun ...`: torchrun installs its own SIGHUP handler, which ends
    the training; the launcher, started with SIGHUP ignored, must not forward the hang-up to it."""
    job = tmp_path / "own_hup.py"
    job.write_text(
        "import os, signal, sys, time, torch\n"
        "signal.signal(signal.SIGHUP, lambda *_: (print('hung up', flush=True), sys.exit(3)))\n"
        "m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for i in range(1, 41):\n"
        "    m(torch.ones(2, 4)).sum().backward(); opt.step(); opt.zero_grad(); time.sleep(0.02)\n"
        "    if i == 5: print('ready', flush=True)\n"
        "print('done', flush=True)\n"
    )
    launcher = subprocess.Popen(
        ["nohup", PYTHON, "-m", "npuprof_launch", "--skip-first", "2", "--active", "2", "--output-dir", out]
        + ["--", sys.executable, str(job)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert launcher.stdout.readline() == "ready\n"
    launcher.send_signal(signal.SIGHUP)
    stdout, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, stderr
    assert stdout == "done\n" and "hung up" not in stdout
    (record,) = status_records(out)
    assert record["steps"] == 40 and record["windows"][0]["complete"]


def test_sigkill_leaves_the_last_known_state(out):
    launcher = start_long_window(out)
    record = wait_for_running(out)
    os.kill(record["pid"], signal.SIGKILL)
    launcher.communicate(timeout=120)
    assert launcher.returncode == 128 + signal.SIGKILL
    (record,) = status_records(out)
    assert record["state"] == "running" and record["window_steps"] == [3, 1002]


# -- 6. loaded twice, nested launchers ----------------------------------------------------------


def test_nested_launcher_still_one_profiler(out):
    result = npuprof(
        ["--output-dir", out, "--", sys.executable, "-m", "npuprof_launch", "--output-dir", out, "--", *job()]
    )
    assert_ok(result)
    assert step_counts(out) == [1]
    assert len(status_records(out)) == 1
    assert result.stderr.count("1 process profiled") == 2, "both launchers report the same run"


@pytest.mark.xdist_group("robustness")
def test_hook_loaded_twice_still_one_profiler(out):
    code = (
        "import runpy, sys; import npuprof_launch.inprocess.hook as b; b.install(); "
        f"runpy.run_path({launch.HOOK_DIR + '/sitecustomize.py'!r}); "
        f"sys.argv = [{TRAIN!r}, '--steps', '8']; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    against_bare(["-c", code], out=out)
    assert step_counts(out) == [1]


# -- 7. two runs at once into one directory -----------------------------------------------------


def test_two_concurrent_runs_never_mix(out):
    runs = [
        subprocess.Popen(
            [PYTHON, "-m", "npuprof_launch", "--active", "2", "--output-dir", out, "--", *job()],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [run.communicate(timeout=300) for run in runs]
    assert all(run.returncode == 0 for run in runs)
    for _, stderr in results:
        assert "1 process profiled" in stderr
    assert step_counts(out) == [2, 2]
    assert len({record["run_id"] for record in status_records(out)}) == 2


# -- 8. security ----------------------------------------------------------------------------------


def test_no_shell_between_the_user_and_the_command(tmp_path, out):
    pwned = tmp_path / "pwned"
    argument = f"$(touch {pwned}); `touch {pwned}`"
    result = npuprof(["--output-dir", out, "--", sys.executable, "-c", "import sys; print(sys.argv[1])", argument])
    assert_ok(result)
    assert result.stdout == argument + "\n"
    assert not pwned.exists()


def test_output_is_never_world_writable_even_with_umask_0(out):
    result = subprocess.run(
        [PYTHON, "-m", "npuprof_launch", "--output-dir", out, "--", *job()],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0),
    )
    assert_ok(result)
    paths = [os.path.join(root, name) for root, dirs, files in os.walk(out) for name in dirs + files] + [out]
    assert len(paths) >= 4
    for path in paths:
        assert not os.stat(path).st_mode & stat.S_IWOTH, f"{path} is world-writable"


def listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if table.endswith(("tcp", "tcp6")) and fields[3] != "0A":  # 0A: LISTEN
                continue
            inodes.add(fields[9])
    return inodes


def test_nothing_listens_on_a_network_port(out):
    launcher = start_long_window(out)
    try:
        record = wait_for_running(out)
        sockets = set()
        for pid in (launcher.pid, record["pid"]):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    sockets.add(target[len("socket:[") : -1])
        assert not sockets & listening_inodes()
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.communicate(timeout=120)


def test_status_record_is_valid_json_at_every_write(out):
    """Records are replaced atomically: a reader polling during the run never sees half a file."""
    launcher = start_long_window(out)
    try:
        wait_for_running(out)
        folder = os.path.join(out, "npuprof_status")
        for name in os.listdir(folder):
            if name.endswith(".json"):  # beside the records: the process log (JSON lines), step times (binary)
                with open(os.path.join(folder, name)) as handle:
                    json.load(handle)
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.communicate(timeout=120)
