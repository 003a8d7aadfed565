"""Npuprof_report.html, one static page of the whole run, opened in a real browser.

The real run is the straggler job under torchrun (rank 1 slow, a stall in step 7); the page is
opened in headless Chromium with name resolution switched off, so that it must render with
nothing fetched, and any console message (an uncaught error, a blocked load) fails the test.
The scale case is 1024 ranks x 100,000 steps, written directly: the page stays under 4 MB (its
render time is for the benchmark, not asserted here).
"""

from __future__ import annotations

import array
import base64
import html
import json
import os
import pathlib
import random
import re
import shutil
import struct
import subprocess
import sys

import pytest
from answers import slow_rank_evidence, texts
from jobs import ROOT, assert_ok, npuprof

from npuprof_launch.common import names, record, steptimes
from npuprof_launch.launcher import answer, htmlreport, report


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium on PATH (Debian: apt-get install chromium), so no page is opened"
)


def _open(page: str, profile: pathlib.Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Open ``page`` in headless Chromium that can fetch nothing; returns the run and the page's console lines."""
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
        pathlib.Path(page).as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return result, console


def _dom(page: str, tmp_path: pathlib.Path) -> str:
    result, console = _open(page, tmp_path / "profile-dom", "--dump-dom")
    assert result.returncode == 0, result.stderr[-3000:]
    assert console == [], f"the page wrote to the console (errors, blocked loads): {console}"
    return result.stdout


def _screenshot(page: str, tmp_path: pathlib.Path) -> pathlib.Path:
    shot = tmp_path / "report.png"
    result, console = _open(page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1400,1800")
    assert result.returncode == 0, result.stderr[-3000:]
    assert console == [], console
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return shot


def _data_block(text: str) -> dict:
    match = re.search(r'<script type="application/json" id="npuprof-data">(.*?)</script>', text, re.S)
    assert match, "the heat map's data block"
    return json.loads(match.group(1))


def _assert_self_contained(text: str) -> None:
    """Nothing to fetch: no external script, stylesheet, image or frame, and a policy that forbids any."""
    assert "default-src 'none'" in text
    assert not re.search(r"<(link|iframe|img|object|embed)\b", text, re.I)
    assert not re.search(r"<script[^>]*\bsrc=", text, re.I)
    assert not re.search(r"url\(|@import", text, re.I)
    for href in re.findall(r'href="([^"]*)"', text):
        assert href == htmlreport.PERFETTO or "://" not in href, f"a link that is not relative: {href}"


# ---------------------------------------------------------------------------------------------
# A real run


@pytest.fixture(scope="module")
def stragglers(tmp_path_factory) -> dict:
    out = str(tmp_path_factory.mktemp("html") / "out")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    # Rank 1 sleeps 200 ms a step and rank 0 stalls 1.5 s once: clear of what a suite of 3 workers on
    # 2 cores does to a 3-step window and to the steps beside a window's aftercare (at 100 ms and
    # 0.6 s, now and then neither was told, rightly, on the evidence).
    command += [os.path.join(ROOT, "examples", "stragglers.py"), "--slow-rank", "1", "--stall-rank", "0"]
    command += ["--slow-s", "0.2", "--stall-s", "1.5"]
    assert_ok(npuprof(["--output-dir", out, "--skip-first", "2", "--active", "3", "--", *command]))
    return report.build(out)


@pytest.mark.xdist_group("html_report")
def test_real_run_writes_one_self_contained_page(stragglers):
    path = htmlreport.write(stragglers)
    out = stragglers["output_dir"]
    assert path == os.path.join(out, "npuprof_report.html")
    assert not [name for name in os.listdir(out) if name.endswith(".tmp")], "written atomically"
    assert not os.stat(path).st_mode & 0o002, "never world-writable"
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert text == htmlreport.render(stragglers)
    _assert_self_contained(text)
    assert "<svg" in text and 'id="heatmap"' not in text, "two ranks: lines, not a heat map"
    for process in stragglers["processes"]:
        for trace in process["traces"]:
            assert f'href="{trace}"' in text, "each trace is linked, relative to the page"
            assert os.path.exists(os.path.join(out, trace))
    assert "ui.perfetto.dev" in text and "Open trace file" in text
    for suggestion in stragglers["job"]["suggestions"]:
        assert html.escape(suggestion) in text
    for finding in texts(stragglers["findings"]):
        assert html.escape(finding) in text


@pytest.mark.xdist_group("html_report")
@needs_chromium
def test_real_run_renders_in_chromium_with_the_slow_rank_marked(stragglers, tmp_path):
    slow = [s["rank"] for s in stragglers["job"]["slow_ranks"]]
    assert slow == [1], slow_rank_evidence(stragglers)
    spikes = [s["step"] for s in stragglers["job"]["spikes"]]
    assert 7 in spikes, stragglers["findings"]
    page = htmlreport.write(stragglers)
    dom = _dom(page, tmp_path)
    assert re.search(r'<html[^>]*data-rendered="1"', dom), "the inline script ran to its end"
    assert "rank 1 (slow)" in dom, "the slow rank is named on the chart"
    assert re.search(r"window 3-5", dom), "the profiled window is marked"
    assert re.search(r"spike: step 7:", dom), "the spike is marked"
    _screenshot(page, tmp_path)


# ---------------------------------------------------------------------------------------------
# Synthetic outputs: many ranks


def _write_output(out: str, ranks: int, steps: int, slow_rank: int, spike_step: int) -> list[dict]:
    """Status records and step-times files of ``ranks`` processes (no traces); returns the records."""
    started = 1_700_000_000_000_000_000
    rng = random.Random(0)
    block = array.array("f", [0.5 + rng.random() * 0.02 for _ in range(997)])
    count = steps - 1  # step 1 has no time
    normal = (block * (count // len(block) + 1))[:count]
    slow = array.array("f", [v * 1.3 for v in normal])
    records = []
    for rank in range(ranks):
        pid = 20_000 + rank
        worker = f"node{rank // 16:03d}_rank{rank}_pid{pid}"
        status = names.status_path(out, worker, started)
        durations = array.array("f", slow if rank == slow_rank else normal)
        durations[spike_step - 2] = 6.0
        os.makedirs(os.path.dirname(status), exist_ok=True)
        steptimes.append(names.step_times_path(status), durations)
        fields = record.normalized(
            {
                "host": f"node{rank // 16:03d}",
                "pid": pid,
                "rank": rank,
                "worker": worker,
                "run_id": "synthetic",
                "state": "done",
                "backend": "torch",
                "options": {"skip-first": 10, "active": 3},
                "steps": steps,
                "windows": [{"first_step": 11, "last_step": 13, "complete": True, "traces": []}],
                "windows_planned": 1,
                "windows_completed": 1,
                "step_times": os.path.relpath(names.step_times_path(status), out),
                "started_ns": started,
                "updated_ns": started + 1,
                "ended": record.ENDED_EXIT,
            }
        )
        record.write(status, fields)
        records.append(fields)
    return records


def test_many_ranks_make_a_heat_map_that_keeps_a_one_step_spike(tmp_path):
    out = str(tmp_path / "out")
    _write_output(out, ranks=16, steps=20_000, slow_rank=5, spike_step=12_345)
    built = report.build(out)
    assert [s["rank"] for s in built["job"]["slow_ranks"]] == [5]
    text = htmlreport.render(built)
    _assert_self_contained(text)
    data = _data_block(text)
    assert data["k"] == 20 and data["cols"] == 1000, "at most 1000 columns, each the max of 20 steps"
    assert "Downsampled" in text and "slowest" in text
    cells = base64.b64decode(data["cells"])
    assert len(cells) == 16 * 1000 and 0 not in cells
    column = (12_345 - 2) // data["k"]
    assert all(cells[row * 1000 + column] == 255 for row in range(16)), "the spike survives the downsampling"
    assert data["slow"] == [5] and data["rows"][5] == "rank 5"
    assert data["windows"] == [[0, 15, 11, 13, True]], "one outline over every row's window"


@needs_chromium
def test_heat_map_renders_in_chromium(tmp_path):
    out = str(tmp_path / "out")
    _write_output(out, ranks=16, steps=3_000, slow_rank=5, spike_step=1_234)
    page = htmlreport.write(report.build(out))
    dom = _dom(page, tmp_path)
    assert re.search(r'<html[^>]*data-rendered="1"', dom)
    canvas = re.search(r"<canvas[^>]*>", dom).group(0)
    assert 'data-rendered="1"' in canvas
    assert 'data-cells="16000"' in canvas, "every cell decoded and drawn"
    assert "rank 5" in dom and "slowname" in dom, "the slow rank is named"
    _screenshot(page, tmp_path)


@pytest.fixture(scope="module")
def thousand_ranks(tmp_path_factory) -> dict:
    """1024 ranks x 100,000 steps, and its report as report.build makes it (the fields render reads).

    The report is put together here: report.build would sort 100 million step times to get each
    rank's statistics, half a minute that tells nothing about the page.
    """
    out = str(tmp_path_factory.mktemp("scale") / "out")
    records = _write_output(out, ranks=1024, steps=100_000, slow_rank=517, spike_step=54_321)
    processes = []
    for fields in records:
        median = 0.51 * (1.3 if fields["rank"] == 517 else 1.0)
        process = {key: fields[key] for key in ("host", "pid", "rank", "backend", "state", "steps", "step_times")}
        process.update(
            stage=None,
            windows=fields["windows"],
            windows_planned=1,
            windows_completed=1,
            traces=[f"{fields['worker']}.1.pt.trace.json"],
            top_operators=[{"name": "aten::mm", "self_us": 1234.5}, {"name": "c10d::allreduce_", "self_us": 987.6}],
            median_step_s=median,
            errors=[],
            warnings=[],
        )
        if fields["rank"] == 517:
            process["slowest_rank"] = True
        processes.append(process)
    spike = {"step": 54_321, "ranks": list(range(1024)), "processes": 1024, "step_s": 6.0, "vs_median": 11.76}
    job = {
        "processes": 1024,
        "ranks": 1024,
        "hosts": 64,
        "steps": 100_000,
        "windows_planned": 1024,
        "windows_completed": 1024,
        "step_time_s": {"median": 0.51, "p90": 0.51, "max": 6.0},
        "slow_ranks": [{"rank": 517, "method": "step_times", "evidence": "median step 663.0 ms against 510.0 ms"}],
        "spikes": [spike],
        "window_steps": [{"stage": None, "steps": [[11, 13]], "ranks": list(range(1024))}],
        "suggestions": ["npuprof-run --skip-first 54320 --active 1 -- python train.py"],
    }
    return {
        "passed": True,
        "findings": [
            answer.item("slow_rank", "rank 517 is the slowest", [517]),
            answer.item("spike", "step 54321: all 1024 ranks, 11.8x the median", range(1024), [54321]),
        ],
        "problems": [],
        "job": job,
        "processes": processes,
        "output_dir": out,
    }


@pytest.mark.xdist_group("html_report")
def test_1024_ranks_by_100000_steps_stay_under_4_mb(thousand_ranks):
    text = htmlreport.render(thousand_ranks)
    size = len(text.encode("utf-8"))
    assert size < 4_000_000, f"{size / 1e6:.1f} MB"
    data = _data_block(text)
    assert len(data["rows"]) == 1024 and data["cols"] <= 1000
    cells = base64.b64decode(data["cells"])
    assert len(cells) == 1024 * data["cols"] and 0 not in cells
    column = (54_321 - 2) // data["k"]
    assert {cells[row * data["cols"] + column] for row in range(1024)} == {255}, "the spike on every rank"
    slow_row = cells[517 * data["cols"] : 518 * data["cols"]]
    other_row = cells[516 * data["cols"] : 517 * data["cols"]]
    assert sorted(slow_row)[len(slow_row) // 2] > sorted(other_row)[len(other_row) // 2], "the slow rank is lighter"
    assert data["slow"] == [517]
    assert text.count("<tr") >= 1024, "a table row per process"


@pytest.mark.xdist_group("html_report")
@needs_chromium
def test_1024_ranks_draw_every_cell_in_chromium(thousand_ranks, tmp_path):
    page = htmlreport.write(thousand_ranks)
    dom = _dom(page, tmp_path)
    canvas = re.search(r"<canvas[^>]*>", dom).group(0)
    cols = _data_block(dom)["cols"]
    assert f'data-cells="{1024 * cols}"' in canvas


# ---------------------------------------------------------------------------------------------
# The parts


def test_bucket_max_keys_is_the_max_of_each_bucket():
    rng = random.Random(7)
    for n, k in ((1, 1), (7, 8), (1000, 1), (12_345, 13), (99_999, 100), (5, 3)):
        values = array.array("f", [rng.random() * 10 ** rng.uniform(-4, 3) for _ in range(n)])
        got = htmlreport._bucket_max_keys(values.tobytes(), k)
        want = [struct.unpack("<I", struct.pack("<f", max(values[i : i + k])))[0] >> 16 for i in range(0, n, k)]
        assert got == want, (n, k)


def test_everything_from_the_job_is_escaped(tmp_path):
    out = str(tmp_path / "out")
    os.makedirs(out)
    evil = '<script>alert("x")</script>&"'
    process = {
        "rank": 0,
        "host": evil,
        "pid": 1,
        "backend": "torch",
        "steps": 3,
        "windows": [{"first_step": 2, "last_step": 2, "complete": True, "traces": [f"a {evil}.pt.trace.json"]}],
        "windows_planned": 1,
        "windows_completed": 1,
        "traces": [f"a {evil}.pt.trace.json"],
        "top_operators": [{"name": evil, "self_us": 1.0}],
        "errors": [evil],
        "warnings": [],
    }
    page = {
        "passed": False,
        "findings": [answer.item("spike", evil, [0], [2])],
        "problems": [answer.item("trace_problem", evil, [0])],
        "notes": [answer.item("cpu_wait", evil, [0], [3])],
        "job": {"ranks": 1, "hosts": 1, "steps": 3, "spikes": [], "slow_ranks": [], "suggestions": [evil]},
        "processes": [process],
        "run": {"command": ["python", evil]},
        "output_dir": out,
    }
    text = htmlreport.render(page)
    assert "<script>alert" not in text
    assert text.count("<script") == 1, "only the page's own script"
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;" in text
    assert 'href="a%20%3Cscript%3E' in text, "a trace link is URL-quoted"
