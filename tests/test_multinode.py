"""Two nodes on one machine, one shared output directory.

Two network namespaces joined by a veth pair, each with a host name of its own (a mount and UTS
namespace per node: its own /etc/hosts, its own hostname), torchrun --nnodes 2 with a c10d
rendezvous across them. Skipped with the reason where namespaces cannot be made (not root, no
iproute2, no unshare); CI on these machines can make them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from answers import check_json
from jobs import PYTHON, ROOT
from outputs import status_records

JOB = os.path.join(ROOT, "examples", "stragglers.py")
ADDRESSES = {"a": "10.77.0.1", "b": "10.77.0.2"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Two namespaces, nodea and nodeb, joined by a veth pair; removed afterwards."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("network namespaces need root, iproute2 (ip) and util-linux (unshare)")
    tag = uuid.uuid4().hex[:6]
    spaces = {name: f"npuprof{tag}{name}" for name in ADDRESSES}
    links = {name: f"np{tag}{name}" for name in ADDRESSES}
    made = []
    try:
        for space in spaces.values():
            result = _run("ip", "netns", "add", space)
            if result.returncode:
                pytest.skip(f"cannot make a network namespace here: {result.stderr.strip()}")
            made.append(space)
        if _run("ip", "link", "add", links["a"], "type", "veth", "peer", "name", links["b"]).returncode:
            pytest.skip("cannot make a veth pair here")
        for name, space in spaces.items():
            _run("ip", "link", "set", links[name], "netns", space)
            _run("ip", "-n", space, "addr", "add", f"{ADDRESSES[name]}/24", "dev", links[name])
            _run("ip", "-n", space, "link", "set", links[name], "up")
            _run("ip", "-n", space, "link", "set", "lo", "up")
        hosts = tmp_path_factory.mktemp("nodes") / "hosts"
        hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{ip} node{n}\n" for n, ip in ADDRESSES.items()))
        yield {"spaces": spaces, "links": links, "hosts": str(hosts), "port": 29000 + int(tag, 16) % 1000}
    finally:
        for space in made:
            _run("ip", "netns", "delete", space)


def start_node(nodes, name: str, launcher_args: list[str], job_args: list[str], rdzv_id: str, log) -> subprocess.Popen:
    """npuprof-run in front of torchrun on node ``name``: the same prefix on every node. Its output
    goes to a file: two nodes writing into pipes read one after the other would block each other."""
    torchrun = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "2",
        "--rdzv_backend", "c10d", "--rdzv_endpoint", f"{ADDRESSES['a']}:{nodes['port']}", "--rdzv_id", rdzv_id,
        JOB, *job_args,
    ]  # fmt: skip
    inner = " ".join(
        [
            f"mount --bind {nodes['hosts']} /etc/hosts && hostname node{name} &&",
            f"GLOO_SOCKET_IFNAME={nodes['links'][name]} OMP_NUM_THREADS=1",
            "exec",
            PYTHON,
            "-m",
            "npuprof_launch",
            *launcher_args,
            "--",
            *torchrun,
        ]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPU_PROF_", "_NPU_PROF_"))}
    env.pop("PYTHONPATH", None)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    return subprocess.Popen(
        ["ip", "netns", "exec", nodes["spaces"][name], "unshare", "--mount", "--uts", "sh", "-c", inner],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def logs(tmp_path, name: str):
    return open(tmp_path / f"node{name}.log", "w")


def tail(tmp_path, name: str) -> str:
    return (tmp_path / f"node{name}.log").read_text()[-3000:]


@pytest.mark.xdist_group("multinode")
def test_both_hosts_and_all_ranks_land_in_one_directory(nodes, tmp_path):
    out = str(tmp_path / "shared")
    launcher = ["--skip-first", "2", "--active", "2", "--output-dir", out]
    rdzv = f"whole{uuid.uuid4().hex[:6]}"
    started = {name: start_node(nodes, name, launcher, ["--steps", "8"], rdzv, logs(tmp_path, name)) for name in "ab"}
    for name, node in started.items():
        node.wait(timeout=300)
        assert node.returncode == 0, tail(tmp_path, name)
    code, report = check_json(out)
    assert code == 0, report["problems"]
    assert report["job"]["hosts"] == 2 and report["job"]["ranks"] == 4
    assert sorted((p["host"], p["rank"]) for p in report["processes"]) == [
        ("nodea", 0), ("nodea", 1), ("nodeb", 2), ("nodeb", 3),
    ]  # fmt: skip


@pytest.mark.xdist_group("multinode")
def test_an_on_demand_trigger_reaches_both_nodes_on_the_same_steps(nodes, tmp_path):
    out = str(tmp_path / "shared")
    launcher = ["--on-demand", "--output-dir", out]
    job = ["--steps", "600", "--slow-s", "0.01", "--stall-step", "0"]
    rdzv = f"demand{uuid.uuid4().hex[:6]}"
    started = [start_node(nodes, name, launcher, job, rdzv, logs(tmp_path, name)) for name in "ab"]
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if os.path.isdir(out) and len([r for r in status_records(out) if r["steps"] >= 16]) == 4:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the four ranks never stepped")
        taken = subprocess.run(
            [PYTHON, "-m", "npuprof_launch", "--trigger", out, "--active", "2", "--timeout", "60"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert taken.returncode == 0, taken.stderr
        while time.monotonic() < deadline + 120:
            if all(r["windows"] and r["windows"][0]["complete"] for r in status_records(out)):
                break
            time.sleep(0.2)
    finally:
        for node in started:
            node.terminate()
        for node in started:
            node.wait(timeout=120)
    records = status_records(out)
    assert {r["host"] for r in records} == {"nodea", "nodeb"}
    covered = {(r["windows"][0]["first_step"], r["windows"][0]["last_step"]) for r in records if r["windows"]}
    assert len(records) == 4 and len(covered) == 1, [(r["rank"], r["windows"]) for r in records]
