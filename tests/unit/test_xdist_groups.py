"""The suite's shared runs rest on pytest-xdist's groups (``--dist loadgroup``, pyproject's
addopts): tests of one ``xdist_group`` run on one worker, so a module fixture's real run is made
once. Some pairs of pytest and pytest-xdist silently ignore the groups (pytest 9.2 with xdist 3.8);
the suite then still passes, at twice the CPU. This runs a small file under the suite's own
options and checks where its tests ran."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import os
    import pytest

    MODES = [pytest.param(m, marks=pytest.mark.xdist_group(f"mode_{m}")) for m in ("a", "b")]


    def note(request):
        with open(os.environ["WHERE"], "a") as handle:
            handle.write(f"{request.node.name} {os.environ.get('PYTEST_XDIST_WORKER')}\\n")


    @pytest.fixture(params=MODES)
    def mode(request):
        return request.param


    @pytest.mark.parametrize("n", range(4))
    def test_in_a_mode(mode, n, request):
        note(request)


    @pytest.mark.xdist_group("marked")
    @pytest.mark.parametrize("n", range(4))
    def test_marked(n, request):
        note(request)
    """
)


def test_the_tests_of_one_group_run_on_one_worker(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    where = tmp_path / "where.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["WHERE"] = str(where)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "3",
            "--dist",
            "loadgroup",
            "-o",
            "addopts=",
            str(tmp_path / "test_probe.py"),
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    workers: dict[str, set[str]] = {}
    for line in where.read_text().splitlines():
        name, worker = line.split()
        group = "marked" if name.startswith("test_marked") else name.split("[")[1].split("-")[0]
        workers.setdefault(group, set()).add(worker)
    assert set(workers) == {"marked", "a", "b"}, workers
    assert all(len(ran_on) == 1 for ran_on in workers.values()), f"a group ran on several workers: {workers}"
