"""No frame of the tool's in what the job sees of torch's callables it counts: a traceback from
inside ``Optimizer.load_state_dict`` reads as it does bare (the load is noted by torch's own load
hook, registered as torch sets each optimizer up), and the loaded state's step count still
numbers the resumed steps."""

from __future__ import annotations

from compare import profiled_against_bare, without_launcher_lines
from jobs import script
from outputs import status_records


def test_a_traceback_from_load_state_dict_is_the_bare_one_and_the_resume_is_numbered(tmp_path):
    out = str(tmp_path / "out")
    runs = profiled_against_bare(
        [script("load_state_frames.py")],
        ["--skip-first", "1", "--active", "1"],
        out=out,
        compare=("stdout", ("stderr", without_launcher_lines)),
    )
    assert "in load_state_dict" in runs.bare.stderr and "npuprof_launch" not in runs.profiled.stderr
    (record,) = status_records(out)
    assert (record["step_offset"], record["numbered_by"]) == (5, "optimizer_state")
