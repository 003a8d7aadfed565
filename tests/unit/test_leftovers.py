"""The processes a process forked in the stop it ended in (launcher/leftovers.py), read from a /proc
laid out by hand: who holds its stacks file open, and who began no earlier than the stop."""

from __future__ import annotations

import os

from npuprof_launch.common import names
from npuprof_launch.launcher import leftovers, reasons

BOOT_S = 1_000_000
TICK = os.sysconf("SC_CLK_TCK")


def proc(tmp_path, target: str, started: dict[int, float], holding: set[int]) -> str:
    """A /proc whose processes ``started`` (seconds after boot) and, for those ``holding``, have
    ``target`` open as fd 3."""
    root = tmp_path / "proc"
    root.mkdir()
    (root / "stat").write_text(f"cpu  1 2 3\nbtime {BOOT_S}\n")
    for pid, after_boot in started.items():
        (root / str(pid) / "fd").mkdir(parents=True)
        fields = ["S", *["0"] * 18, str(round(after_boot * TICK))]  # field 22 is the 20th after ")"
        (root / str(pid) / "stat").write_text(f"{pid} (python) {' '.join(fields)} 0 0\n")
        os.symlink(target if pid in holding else "/dev/null", root / str(pid) / "fd" / "3")
    return str(root)


def record(output_dir: str, stop_began_s: float | None) -> dict:
    window = {"first_step": 3, "last_step": 4, "complete": False, "traces": []}
    if stop_began_s is not None:
        window["stop_began_ns"] = int((BOOT_S + stop_began_s) * 1e9)
    return {
        "host": names.host(),
        "pid": 10,
        "backend": "npu",
        "windows": [window],
        "hang_watch": {"stacks": "npuprof_status/p.stacks"},
    }


def test_the_children_forked_in_the_stop_are_found_and_no_other(tmp_path):
    out = str(tmp_path / "out")
    target = os.path.join(out, "npuprof_status", "p.stacks")
    # 10 the process itself; 11 a DataLoader worker from long before; 12 and 13 the stop's workers;
    # 14 began after the stop but holds nothing of the process's.
    root = proc(tmp_path, target, {10: 5.0, 11: 50.0, 12: 100.2, 13: 100.5, 14: 101.0}, holding={10, 11, 12, 13})
    assert leftovers.forked_in_stop(record(out, 100.0), out, proc=root) == [12, 13]
    assert leftovers.forked_in_stop(record(out, None), out, proc=root) == [], "no stop under way: nothing read"
    elsewhere = {**record(out, 100.0), "host": "another-host"}
    assert leftovers.forked_in_stop(elsewhere, out, proc=root) == [], "another host's processes are not here"


def test_the_reason_names_them_with_the_command_that_ends_them():
    said = reasons._forked_words([12, 13], "npu")
    assert said.startswith("; it left running 2 processes it forked in that stop, pid 12, 13 (torch_npu's parse")
    assert said.endswith(": kill 12 13")
    assert reasons._forked_words([], "npu") == ""
    assert "torch_npu" not in reasons._forked_words([12], "torch")
