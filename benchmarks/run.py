"""What npuprof-launch costs a job, measured against the same job without it: ``python benchmarks/run.py``.

The hook runs in every Python process of a job and the step clock on every iteration of runs
that last days, so each figure is a paired comparison made in this one run: the arms
are started in alternating order, round after round, and the figure is the median of the pairs'
differences, never an absolute time measured alone. On a shared machine wall time mostly
measures the neighbours, so CPU time is shown beside it, and:

* interpreter start-up (about 20 ms, several ms of jitter) is counted in instructions with
  callgrind, the same count run after run, and turned into milliseconds at the bare start-up's
  own rate (instructions per ms of CPU time) measured in the same run;
* the step clock is timed inside one process, its hooks attached and detached block by block
  (job.py), so that both arms of a pair share the process, its memory layout and its moment.

Byte-code caches are written as users have them (PYTHONDONTWRITEBYTECODE unset, one warm-up run).

Figures 6 to 9 measure what a window's end and the whole-run step times cost:

6. the job's stall at a window's end (the wall time between the end of the window's last step and
   the start of the next, less a step), npuprof-run against the same window hand-written with
   torch.profiler and tensorboard_trace_handler; and, with the output on slow storage (a FUSE
   passthrough that makes every write wait, slowfs.py), ``--stage-dir`` against the hand-written
   window writing there;
7. the bytes on disk per recorded step, plain and compressed (from the runs of 6);
8. the per-step cost of ``--step-times`` against ``--no-step-times``, in one process like 2a;
9. ``--check`` of synthetic outputs of 256 to 1024 ranks with step times and per-window summaries
   (9a, 9b), and of the same ranks' NPU sessions as torch_npu's parse leaves them (9c);
10. the per-step cost of the hang watch (its re-arm of faulthandler's timer at each checkpoint),
    on against off, in one process like 8.

``--quick`` runs every figure with a few repetitions, so CI keeps the benchmark alive; its
numbers are indicative only.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from npuprof_launch.common import deliverables, names, options
from npuprof_launch.launcher import launch

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "job.py")
PYTHON = sys.executable
#: A --skip-first so large that no window ever opens: the clock counts, the profiler never starts.
NEVER = 10**9


class Child:
    """One finished child process, measured from outside (wait4): nothing of ours runs inside it.

    ``cpu_s`` (user + system, the child's and its waited-for children's) is the steadier of the two
    times on a shared machine: it leaves out the time the child waited for a core.
    """

    def __init__(self, wall_s: float, cpu_s: float, maxrss_kb: int, returncode: int, stdout: str, stderr: str) -> None:
        self.wall_s = wall_s
        self.cpu_s = cpu_s
        self.maxrss_kb = maxrss_kb
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def json(self) -> dict:
        if self.returncode != 0:
            raise RuntimeError(f"child failed with exit {self.returncode}:\n{self.stderr[-3000:]}")
        return json.loads(self.stdout.strip().splitlines()[-1])


def run_child(argv: list[str], env: dict[str, str], timeout: float | None = None) -> Child:
    """Run ``argv`` to the end; output goes to files so that wait4 can collect the child's rusage.

    ``timeout``: past it the child's process group is killed (a job stuck on a broken filesystem
    must fail the benchmark, not hang it).
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            argv, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=timeout is not None
        )
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, _kill_group, (process.pid,))
            timer.start()
        try:
            _, wait_status, usage = os.wait4(process.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(wait_status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Child(wall, cpu, usage.ru_maxrss, process.returncode, out.read(), err.read())


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def base_env() -> dict[str, str]:
    """This environment without any variable of ours, with byte-code caches written as users have them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPU_PROF_", "_NPU_PROF_"))}
    for name in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    env["PYTHONHASHSEED"] = "0"  # the same hash order in every run: identical instruction counts
    return env


def tool_env(output_dir: str, **given: object) -> dict[str, str]:
    """The environment npuprof-run gives a job, built by the launcher's own code, with these options."""
    config, problems = options.resolve({name.replace("_", "-"): str(v) for name, v in given.items()}, {})
    if problems:
        raise ValueError("; ".join(problems))
    return launch.job_environment(config, base_env(), output_dir, run_id="benchmark")


def rounds_of(arms: dict[str, object], rounds: int, run) -> dict[str, list]:
    """Run every arm once per round, the order rotating each round, so drifting load hits all arms alike."""
    names = list(arms)
    results: dict[str, list] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(run(arms[name]))
    return results


def median(values) -> float:
    return statistics.median(values)


def verdict(value: float, limit: float, unit: str) -> str:
    return f"[target <= {limit:g} {unit}: {'met' if value <= limit else 'MISSED'}]"


class Bench:
    """The figures, in the order docs/benchmarks.md's table lists them; each prints its own lines."""

    def __init__(self, quick: bool, workdir: str, device: str = "cpu") -> None:
        self.quick = quick
        self.workdir = workdir
        #: Where job.py puts its model: the step clock's hooks run on the CPU either way, but on a
        #: GPU the step around them is kernel launches instead of CPU arithmetic.
        self.device = device

    def say(self, line: str) -> None:
        print(line, flush=True)

    def scratch(self, name: str) -> str:
        path = os.path.join(self.workdir, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    # -- 1. start-up ----------------------------------------------------------------------------

    def startup(self) -> None:
        """``python -c pass`` with the hook variables on, and with only the hook directory on the path.

        Milliseconds come from instruction counts at the bare start's own rate: its instructions
        per millisecond of CPU time, which a loaded machine inflates far less than wall time.
        """
        out = self.scratch("startup_out")
        off = base_env()
        off["PYTHONPATH"] = launch.HOOK_DIR
        arms = {"bare": base_env(), "on": tool_env(out), "off": off}
        argv = [PYTHON, "-c", "pass"]
        for env in arms.values():
            run_child(argv, env)  # writes the byte-code caches
        runs = rounds_of(arms, 10 if self.quick else 100, lambda env: run_child(argv, env))
        counts = None
        if shutil.which("valgrind"):
            counts = rounds_of(arms, 1 if self.quick else 3, lambda env: callgrind_instructions(argv, env))
        bare_cpu = median([r.cpu_s for r in runs["bare"]]) * 1e3
        bare_wall = median([r.wall_s for r in runs["bare"]]) * 1e3
        for arm, label, limit in (
            ("on", "hook on (NPU_PROF_ENABLE=1)", 5.0),
            ("off", "hook dir on path, switch unset", 1.5),
        ):
            wall = median([(a.wall_s - b.wall_s) * 1e3 for a, b in zip(runs[arm], runs["bare"])])
            cpu = median([(a.cpu_s - b.cpu_s) * 1e3 for a, b in zip(runs[arm], runs["bare"])])
            paired = f"paired medians of {len(runs[arm])}: wall {wall:+.2f} ms, CPU {cpu:+.2f} ms"
            if counts is not None:
                bare_n, arm_n = median(counts["bare"]), median(counts[arm])
                extra = (arm_n - bare_n) / bare_n * bare_cpu
                how = (
                    f"callgrind {(arm_n - bare_n) / 1e6:+.2f} M instructions over bare {bare_n / 1e6:.1f} M = "
                    f"{bare_cpu:.1f} ms CPU ({bare_wall:.1f} ms wall); {paired}"
                )
            else:
                extra = cpu
                how = f"no valgrind here, so CPU time: bare {bare_cpu:.1f} ms CPU, {bare_wall:.1f} ms wall; {paired}"
            self.say(
                f"1{'a' if arm == 'on' else 'b'}. start-up, {label}: {extra:+.2f} ms  {verdict(extra, limit, 'ms')}"
            )
            self.say(f"      {how}")

    def idle_torch(self) -> None:
        """A process that imports torch and never steps (a torchrun agent, a spawned worker)."""
        out = self.scratch("idle_out")
        arms = {"bare": base_env(), "on": tool_env(out)}
        argv = [PYTHON, "-c", "import torch"]
        run_child(argv, arms["on"])  # writes the byte-code caches of what the hook imports with torch
        runs = rounds_of(arms, 1 if self.quick else 5, lambda env: run_child(argv, env))
        wall = median([a.wall_s - b.wall_s for a, b in zip(runs["on"], runs["bare"])])
        cpu = median([a.cpu_s - b.cpu_s for a, b in zip(runs["on"], runs["bare"])])
        rss = median([a.maxrss_kb - b.maxrss_kb for a, b in zip(runs["on"], runs["bare"])]) / 1024
        bare_s = median([r.wall_s for r in runs["bare"]])
        bare_mb = median([r.maxrss_kb for r in runs["bare"]]) / 1024
        self.say(
            f"1c. a process that imports torch and never steps: {wall * 1e3:+.0f} ms wall, {cpu * 1e3:+.0f} ms CPU, "
            f"{rss:+.1f} MB peak memory  [no target set]"
        )
        self.say(f"      bare: {bare_s:.2f} s, {bare_mb:.0f} MB; paired medians of {len(runs['on'])}")

    # -- 2. step clock -----------------------------------------------------------------------------

    def step_clock(self) -> dict[str, list[Child]]:
        """The clock's cost per optimizer.step outside a window, and the training loop after the last window.

        The cost per step is timed on the smallest step there is (one scalar SGD), with the hooks
        attached and detached in turn inside one process (job.py): on a training step the same
        comparison strays by more than the figure, and the control (detached against detached)
        shows by how much. After the last window, bare and post-window processes are compared
        (with bare against bare as their control), and the hooks that remain are timed alone.
        Returns the runs, whose peak memory is figure 4.
        """
        rounds = 1 if self.quick else 9
        out = self.scratch("clock_out")
        train = [PYTHON, JOB, "--workload", "train", "--device", self.device, "--steps", "20", "--block", "40"]
        # The clock's arm times five times as many rounds: its figure is the one near the noise.
        outside = [*train, "--rounds", "6" if self.quick else "150"]
        train += ["--rounds", "6" if self.quick else "30"]
        tiny = [PYTHON, JOB, "--workload", "tiny", "--device", self.device, "--steps", "10", "--block", "1000"]
        tiny += ["--rounds", "20" if self.quick else "100"]
        arms = {
            "bare": (train, base_env()),
            "bare_again": (train, base_env()),
            "outside": (outside, tool_env(out, skip_first=NEVER)),
            "after": (train, tool_env(out, skip_first=2, active=2)),
            "tiny": (tiny, tool_env(out, skip_first=NEVER)),
        }
        runs = rounds_of(arms, rounds, lambda arm: run_child(*arm))
        data = {name: [child.json() for child in children] for name, children in runs.items()}
        check_arm(data["outside"], "waiting")
        check_arm(data["after"], "done")
        check_arm(data["tiny"], "waiting")

        tiny_cost, tiny_control = hook_cost(data["tiny"])
        train_cost, train_control = hook_cost(data["outside"])
        tiny_bare = median([d for r in data["tiny"] for d in r["detached_us"]])
        bare_step = median([median(r["attached_us"]) for r in data["bare"]])
        self.say(
            f"2a. step clock outside a window: {tiny_cost[0]:+.2f} us per optimizer.step  "
            f"{verdict(tiny_cost[0], 2.0, 'us')}"
        )
        self.say(
            f"      a bare one-scalar SGD step ({tiny_bare:.1f} us), hooks attached vs detached in one process, "
            f"CPU time: {spread(tiny_cost)}; control (detached vs detached): {spread(tiny_control)}"
        )
        self.say(
            f"      in a {bare_step / 1e3:.2f} ms training step, the same comparison: {spread(train_cost)}; "
            f"control: {spread(train_control)}"
        )

        ratios = process_ratios(data["after"], data["bare"])
        control = process_ratios(data["bare_again"], data["bare"])
        hooks_only = [a / d for r in data["after"] for a, d in zip(r["attached_us"], r["detached_us"])]
        slower = (median(hooks_only) - 1) * 100
        self.say(
            f"2b. after the last window, the hooks that remain: {slower:+.2f}% per training step  "
            f"{verdict(slower, 1.0, '%')}"
        )
        self.say(
            f"      attached vs detached in one process, median of {len(hooks_only)} pairs; post-window against bare "
            f"processes: {(median(ratios) - 1) * 100:+.2f}%, bare against bare (control): "
            f"{(median(control) - 1) * 100:+.2f}%, medians of {len(ratios)} pair(s) of processes"
        )

        return runs

    # -- 4. peak memory ---------------------------------------------------------------------------

    def memory(self, runs: dict[str, list[Child]]) -> None:
        """Peak memory of the same training job, bare and under the clock outside a window (from wait4)."""
        rss = [a.maxrss_kb - b.maxrss_kb for a, b in zip(runs["outside"], runs["bare"])]
        bare_rss = median([child.maxrss_kb for child in runs["bare"]]) / 1024
        self.say(
            f"4. peak memory (max RSS) outside the window: {median(rss) / 1024:+.1f} MB over bare {bare_rss:.0f} MB "
            f"(same training job, median of {len(rss)} pair(s))  [no target set]"
        )

    # -- 3. the whole run -----------------------------------------------------------------------

    def whole_run(self) -> None:
        """npuprof-run around the job against the same schedule written by hand with torch.profiler.

        The tool's arm passes ``--no-gzip``: both arms then leave the same plain trace, as before
        compression became the default; what compression costs the job is figure 6's.
        """
        steps = 150 if self.quick else 8000
        skip, warmup, active = steps // 2, 1, 3
        job = [PYTHON, JOB, "--workload", "train", "--device", self.device, "--steps", str(steps)]

        def tool(_):
            out = self.scratch("whole_tool")
            argv = [PYTHON, "-m", "npuprof_launch", "--skip-first", str(skip), "--warmup", str(warmup)]
            argv += ["--active", str(active), "--no-gzip", "--output-dir", out, "--", *job]
            child = run_child(argv, base_env())
            check_traces(child, out, active)
            return child

        def hand(_):
            out = self.scratch("whole_hand")
            child = run_child([*job, "--hand-profiler", f"{skip},{warmup},{active},1", "--trace-dir", out], base_env())
            check_traces(child, out, active)
            return child

        runs = rounds_of({"tool": tool, "hand": hand}, 1 if self.quick else 5, lambda run: run(None))
        slower = (median([t.wall_s / h.wall_s for t, h in zip(runs["tool"], runs["hand"])]) - 1) * 100
        cpu = (median([t.cpu_s / h.cpu_s for t, h in zip(runs["tool"], runs["hand"])]) - 1) * 100
        self.say(
            f"3. whole run through npuprof-run against the hand-written torch.profiler loop: {slower:+.1f}% wall, "
            f"{cpu:+.1f}% CPU  {verdict(slower, 5.0, '%')}"
        )
        self.say(
            f"      {steps} training steps, window of {active} steps after {skip}; wall medians "
            f"{median([t.wall_s for t in runs['tool']]):.2f} vs {median([h.wall_s for h in runs['hand']]):.2f} s, "
            f"paired medians of {len(runs['tool'])}"
        )

    # -- 5. --check on a large output -------------------------------------------------------------

    def check_scaling(self) -> None:
        """``npuprof-run --check`` on synthetic outputs of 1x, 2x and 4x the trace size: it must grow linearly."""
        import synthetic_output

        ranks, unit = (4, 2.0) if self.quick else (16, 4.0)
        dirs = {}
        for factor in (1, 2, 4):
            path = self.scratch(f"check_{factor}x")
            dirs[factor] = (path, synthetic_output.write_output(path, ranks, unit * factor))

        def check(entry) -> Child:
            child = run_child([PYTHON, "-m", "npuprof_launch", "--check", entry[0], "--json"], base_env())
            if child.returncode != 0 or not json.loads(child.stdout)["passed"]:
                raise RuntimeError(f"--check did not pass on the synthetic output:\n{child.stdout[-2000:]}")
            return child

        runs = rounds_of(dirs, 1 if self.quick else 3, check)
        cpu = {f: median([c.cpu_s for c in children]) for f, children in runs.items()}
        wall = {f: median([c.wall_s for c in children]) for f, children in runs.items()}
        rss = {f: median([c.maxrss_kb for c in children]) / 1024 for f, children in runs.items()}
        sizes = ", ".join(f"{dirs[f][1] / 1e6:.0f} MB {cpu[f]:.2f} s" for f in (1, 2, 4))
        self.say(
            f"5. --check on {ranks} ranks, trace size 1x/2x/4x: {sizes} CPU; ratio 2x/1x {cpu[2] / cpu[1]:.2f}, "
            f"4x/2x {cpu[4] / cpu[2]:.2f} (linear: 2.00, less the fixed start-up)"
        )
        self.say(
            f"      wall {', '.join(f'{wall[f]:.2f}' for f in (1, 2, 4))} s; peak memory "
            f"{', '.join(f'{rss[f]:.0f}' for f in (1, 2, 4))} MB; median of {len(runs[1])}"
        )
        for path, _ in dirs.values():
            shutil.rmtree(path, ignore_errors=True)

    # -- 6 and 7. a window's end ------------------------------------------------------------------

    def window_end(self, stall: bool = True) -> None:
        """The job's stall at a window's end, and the bytes a recorded step leaves on disk (figure 7).

        Every arm runs the same wide job (many small layers: a large trace for a short step) with
        the same window, recording shapes as many users do. The job notes when each iteration
        began; the stall is the time from the end of the window's last recorded step to the start
        of the step after it: the length of the iteration that holds the window's end, less a
        recorded step's (the median of the window's other recorded iterations). What spills into
        the two iterations after it (the aftercare's CPU beside the job) is shown apart. Arms,
        started alternately round after round: the window written by hand (torch.profiler.schedule,
        tensorboard_trace_handler, prof.step() each iteration), npuprof-run --no-gzip, npuprof-run
        (gzip, the default); with slow storage, npuprof-run --stage-dir (local) with --output-dir
        on it, and the hand-written window writing there.
        ``stall=False``: only the two arms figure 7 needs, once.
        """
        import slowfs

        quick = self.quick
        layers = 40 if quick else 200
        skip, warmup, active, after = (4, 1, 2, 5) if quick else (8, 1, 3, 8)
        steps = skip + warmup + active + after
        rounds = 1 if quick or not stall else 5
        job = [PYTHON, JOB, "--workload", "wide", "--layers", str(layers), "--device", self.device]
        job += ["--steps", str(steps), "--step-starts"]
        schedule = ["--skip-first", str(skip), "--warmup", str(warmup), "--active", str(active), "--record-shapes"]
        limit = 600.0

        def tool(out: str, *extra: str) -> dict:
            argv = [PYTHON, "-m", "npuprof_launch", *schedule, *extra, "--output-dir", out, "--", *job]
            return self._window_run(run_child(argv, base_env(), limit), out, skip, warmup, active)

        def hand(out: str) -> dict:
            argv = [*job, "--hand-profiler", f"{skip},{warmup},{active},1", "--tensorboard", "--record-shapes"]
            child = run_child([*argv, "--trace-dir", out], base_env(), limit)
            return self._window_run(child, out, skip, warmup, active)

        arms = {
            "plain": lambda: tool(self.scratch("end_plain"), "--no-gzip"),
            "gzip": lambda: tool(self.scratch("end_gzip")),
        }
        if stall:
            arms = {"hand": lambda: hand(self.scratch("end_hand")), **arms}
        latency_ms, mbps = 0.5, 50.0
        reason = slowfs.unavailable() if stall else "not measured (figure 7 alone)"
        with contextlib.ExitStack() as stack:
            counters = None
            if reason is None:
                slow = self.scratch("slow_mount")
                try:
                    counters = stack.enter_context(
                        slowfs.mounted(self.scratch("slow_backing"), slow, latency_ms=latency_ms, mbps=mbps)
                    )
                except OSError as exc:
                    reason = f"the slow filesystem could not be mounted: {exc}"
            if counters is not None:
                arms["staged"] = lambda: tool(
                    _fresh(os.path.join(slow, "staged")), "--stage-dir", self.scratch("end_stage")
                )
                arms["hand_slow"] = lambda: hand(_fresh(os.path.join(slow, "hand")))
            runs = rounds_of(arms, rounds, lambda run: run())
        plain = median([r["bytes"] for r in runs["plain"]]) / active
        packed = median([r["bytes"] for r in runs["gzip"]]) / active
        if stall:
            self._say_window_end(runs, layers, active, reason, counters, latency_ms, mbps)
        self.say(
            f"7. trace bytes per recorded step: plain {plain / 1e3:.0f} KB, gzip {packed / 1e3:.0f} KB "
            f"(ratio {plain / packed:.1f})"
        )
        self.say(
            f"      the wide job's window of {active} steps ({layers} layers, record_shapes), --no-gzip and gzip arms "
            f"of figure 6: {plain * active / 1e6:.1f} MB and {packed * active / 1e6:.1f} MB a window; median of "
            f"{len(runs['plain'])}"
        )

    def _window_run(self, child: Child, out: str, skip: int, warmup: int, active: int) -> dict:
        """One arm's run: its stall in wall and CPU time (seconds), its trace bytes at home, its steps."""
        check_traces(child, out, active)
        found = child.json()
        last = skip + warmup + active  # the iteration of the window's last recorded step (1-based)
        result = {"wall_s": child.wall_s}
        for clock in ("", "cpu_"):
            starts = found[f"{clock}starts_s"]
            durations = [b - a for a, b in zip(starts, starts[1:])]  # durations[i]: iteration i + 1
            recorded = median(durations[skip + warmup : last - 1])
            normal = median(durations[1 : skip - 2] + durations[last + 2 :])
            result[f"{clock}stall_s"] = durations[last - 1] - recorded
            result[f"{clock}after_s"] = sum(d - normal for d in durations[last : last + 2])
            result[f"{clock}normal_s"], result[f"{clock}recorded_s"] = normal, recorded
        result["bytes"] = sum(
            os.path.getsize(os.path.join(out, name))
            for name in os.listdir(out)
            if name.endswith(names.TORCH_TRACE_SUFFIXES)
        )
        return result

    def _say_window_end(self, runs, layers, active, reason, counters, latency_ms, mbps) -> None:
        def paired(arm: str, against: str, key: str = "stall_s") -> float:
            return median([a[key] / b[key] for a, b in zip(runs[arm], runs[against])])

        def middle(arm: str, key: str = "stall_s") -> float:
            return median([r[key] for r in runs[arm]])

        trace_mb = middle("hand", "bytes") / 1e6
        ratio = paired("gzip", "hand")
        self.say(
            f"6a. window-end stall, npuprof-run (gzip, the default) against the hand-written torch.profiler window: "
            f"{middle('gzip'):.2f} s vs {middle('hand'):.2f} s (ratio {ratio:.2f})  "
            f"{verdict(ratio, 1.0, 'x hand-written')}"
        )
        self.say(
            f"      a {trace_mb:.1f} MB trace ({active} recorded steps of {layers} layers, record_shapes; a step "
            f"{middle('hand', 'normal_s') * 1e3:.0f} ms bare, {middle('hand', 'recorded_s') * 1e3:.0f} ms recorded): "
            f"the last recorded iteration less a recorded step; --no-gzip {middle('plain'):.2f} s (ratio "
            f"{paired('plain', 'hand'):.2f}); CPU time of the job: gzip {middle('gzip', 'cpu_stall_s'):.2f}, --no-gzip "
            f"{middle('plain', 'cpu_stall_s'):.2f}, hand-written {middle('hand', 'cpu_stall_s'):.2f} s; the two steps "
            f"after it, over a bare step: gzip {middle('gzip', 'after_s') * 1e3:+.0f} ms, hand-written "
            f"{middle('hand', 'after_s') * 1e3:+.0f} ms; paired medians of {len(runs['hand'])}"
        )
        if counters is None:
            self.say(f"6b. window-end stall with --stage-dir, output on slow storage: skipped: {reason}")
            return
        staged = paired("staged", "hand_slow")
        self.say(
            f"6b. window-end stall with --stage-dir, output on slow storage: {middle('staged'):.2f} s vs "
            f"{middle('hand_slow'):.2f} s hand-written to the same slow directory (ratio {staged:.2f})  "
            f"{verdict(staged, 0.5, 'x hand-written')}"
        )
        requests, written = counters.get("write_requests", 0), counters.get("write_bytes", 0) / 1e6
        self.say(
            f"      slow storage: a FUSE passthrough (benchmarks/slowfs.py), each write request waits "
            f"{latency_ms:g} ms + its bytes at {mbps:g} MB/s, metadata changes {latency_ms:g} ms; "
            f"{requests} write requests, {written:.0f} MB, {counters.get('slept_s', 0.0):.1f} s waited in all; "
            f"the stage on the local disk; the two steps after the window, over a bare step: staged "
            f"{middle('staged', 'after_s') * 1e3:+.0f} ms, hand-written {middle('hand_slow', 'after_s') * 1e3:+.0f} ms"
        )

    # -- 8. whole-run step times --------------------------------------------------------------------

    def step_times_cost(self) -> None:
        """``--step-times`` against ``--no-step-times`` per optimizer.step, in one process like 2a.

        job.py switches the session's step times on and off block by block (StepTimesSwitch) on
        the one-scalar SGD step under the clock, outside any window. Both settings time each step
        in the clock's hook; they differ at the checkpoints (every CHECKPOINT_S), where on appends
        the times to the file. So that the blocks hold checkpoints, the job makes them come every
        ``checkpoint_s``, far more often than they do: the figure is an upper bound, and is also
        given scaled to the real interval.
        """
        checkpoint_s = 0.02
        data, cost, control, real_s = self._checkpoint_toggle("step-times", checkpoint_s)
        step_us = median([d for r in data for d in r["detached_us"]])
        self.say(
            f"8. whole-run step times (--step-times vs --no-step-times): {cost[0]:+.3f} us per optimizer.step  "
            f"{verdict(cost[0], 0.5, 'us')}"
        )
        self.say(
            f"      a one-scalar SGD step under the clock ({step_us:.1f} us), step times on vs off block by block in "
            f"one process, CPU time, checkpoints every {checkpoint_s:g} s ({real_s / checkpoint_s:.0f}x as often as "
            f"the real {real_s:g} s): {spread(cost)}; control (off vs off): {spread(control)}; scaled to the real "
            f"interval: {cost[0] * checkpoint_s / real_s:+.4f} us"
        )

    def _checkpoint_toggle(self, toggle: str, checkpoint_s: float) -> tuple[list[dict], tuple, tuple, float]:
        """Figures 8 and 10: job.py's ``--toggle`` switches a checkpoint's work on and off block by block
        in one process, outside any window, with checkpoints every ``checkpoint_s``. Returns the
        children's data, the cost and the control (hook_cost) and the real checkpoint interval."""
        out = self.scratch(toggle.replace("-", "") + "_out")
        argv = [PYTHON, JOB, "--workload", "tiny", "--device", self.device, "--steps", "10", "--block", "5000"]
        argv += ["--rounds", "4" if self.quick else "30", "--toggle", toggle, "--checkpoint-s", str(checkpoint_s)]
        arms = {index: argv for index in range(1 if self.quick else 3)}
        runs = rounds_of(arms, 1, lambda command: run_child(command, tool_env(out, skip_first=NEVER)))
        data = [child.json() for children in runs.values() for child in children]
        check_arm(data, "waiting")
        cost, control = hook_cost(data)
        return data, cost, control, data[0]["real_checkpoint_s"]

    # -- 10. the hang watch ---------------------------------------------------------------------------

    def hang_watch_cost(self) -> None:
        """The hang watch on against off per optimizer.step, in one process like 8: the watch
        re-arms faulthandler's timer at each checkpoint and does nothing at any other step, so the
        blocks make checkpoints come every ``checkpoint_s`` (an upper bound, also scaled to the real
        interval)."""
        checkpoint_s = 0.02
        _, cost, control, real_s = self._checkpoint_toggle("hang-watch", checkpoint_s)
        scaled = cost[0] * checkpoint_s / real_s
        self.say(
            f"10. hang watch (on vs --hang-after 0), at the real checkpoint interval: {scaled:+.4f} us per "
            f"optimizer.step  {verdict(scaled, 0.2, 'us')}"
        )
        self.say(
            f"      a one-scalar SGD step under the clock, the watch on vs off block by block in one process, CPU "
            f"time, checkpoints every {checkpoint_s:g} s ({real_s / checkpoint_s:.0f}x as often as the real "
            f"{real_s:g} s): {spread(cost)} (the upper bound); control (off vs off): {spread(control)}"
        )

    # -- 9. --check of a thousand ranks -------------------------------------------------------------

    def summary_scaling(self) -> None:
        """``npuprof-run --check`` of synthetic outputs of 256, 512 and 1024 ranks, with step times and
        per-window summaries, and at fixed ranks with 4x the trace: time and HTML size against ranks.

        Each rank's trace is past report.DEEP_BYTES in all (the summaries are read, not the traces),
        written once and hard-linked for every rank: the report only stats the traces then.
        """
        import synthetic_output

        from npuprof_launch.launcher import htmlreport, report

        counts = (64, 128, 256) if self.quick else (256, 512, 1024)
        steps = 500 if self.quick else 20000
        megabytes = round(1.05 * report.DEEP_BYTES / counts[0] / 1e6, 2)
        shape = {"step_times": steps, "summaries": True, "link": True}
        dirs = {}
        for ranks in counts:
            path = self.scratch(f"ranks_{ranks}")
            dirs[ranks] = (path, synthetic_output.write_output(path, ranks, megabytes, **shape))
        big = self.scratch(f"ranks_{counts[0]}_4x")
        dirs["4x"] = (big, synthetic_output.write_output(big, counts[0], 4 * megabytes, **shape))

        def check(entry) -> Child:
            child = run_child([PYTHON, "-m", "npuprof_launch", "--check", entry[0]], base_env())
            if child.returncode != 0:
                raise RuntimeError(f"--check did not pass on the synthetic output:\n{child.stdout[-2000:]}")
            if "were not read again" not in child.stdout:
                raise RuntimeError(f"--check read the traces instead of their summaries:\n{child.stdout[-2000:]}")
            child.html_bytes = os.path.getsize(os.path.join(entry[0], htmlreport.FILE_NAME))
            return child

        runs = rounds_of(dirs, 1 if self.quick else 3, check)
        cpu = {key: median([c.cpu_s for c in children]) for key, children in runs.items()}
        wall = {key: median([c.wall_s for c in children]) for key, children in runs.items()}
        html = {key: median([c.html_bytes for c in children]) / 1e6 for key, children in runs.items()}
        a, b, c = counts
        self.say(
            f"9a. --check at {a}/{b}/{c} ranks with step times and window summaries: "
            f"{'/'.join(f'{cpu[n]:.2f}' for n in counts)} s CPU, HTML {'/'.join(f'{html[n]:.2f}' for n in counts)} MB; "
            f"ratios {c}/{b} {cpu[c] / cpu[b]:.2f} and {b}/{a} {cpu[b] / cpu[a]:.2f} (time), "
            f"{html[c] / html[b]:.2f} and {html[b] / html[a]:.2f} (HTML) (linear: 2.00)"
        )
        self.say(
            f"      {steps} steps of step times a rank ({steps * 4 / 1e3:.0f} KB), a {megabytes:g} MB trace a rank "
            f"(hard links: past {report.DEEP_BYTES / 2**20:.0f} MiB the report reads the summaries); wall "
            f"{'/'.join(f'{wall[n]:.2f}' for n in counts)} s; median of {len(runs[a])}"
        )
        self.say(
            f"9b. --check at {a} ranks with window summaries, trace size 1x/4x ({dirs[a][1] / 1e9:.1f}/"
            f"{dirs['4x'][1] / 1e9:.1f} GB): {cpu[a]:.2f}/{cpu['4x']:.2f} s CPU, ratio 4x/1x {cpu['4x'] / cpu[a]:.2f} "
            f"(flat: 1.00); wall {wall[a]:.2f}/{wall['4x']:.2f} s"
        )
        for path, _ in dirs.values():
            shutil.rmtree(path, ignore_errors=True)

    # -- 9c. --check of a thousand Ascend ranks -----------------------------------------------------

    def npu_check_scaling(self) -> None:
        """``npuprof-run --check`` of synthetic NPU outputs of 256, 512 and 1024 ranks, text and db
        export, with step times as figure 9a's: every rank's HCCL operations (communication.json,
        or the db's COMMUNICATION_OP) are read for the judge of which rank the others wait for, and
        its steps (step_trace_time.csv, or analysis.db), where 9a reads the windows' summaries.

        Each output is checked once with ``--json`` before it is timed, and refused unless it passed
        with every rank's collectives read and the judge's per-collective rule run over them; that
        first check also lays out the msprof-analyze hand-off (hard links), which the timed ones
        find in place, as a second ``--check`` of a real run does.
        """
        import synthetic_npu_output

        counts = (16, 32, 64) if self.quick else (256, 512, 1024)  # quick: that it runs (the suite runs it)
        steps = 500 if self.quick else 20000
        exports = ("text", "db")
        dirs = {}
        for export in exports:
            for ranks in counts:
                path = self.scratch(f"npu_{export}_{ranks}")
                size = synthetic_npu_output.write_output(path, ranks, export=(export,), step_times=steps)
                _check_npu_output(path, ranks)
                dirs[export, ranks] = (path, size)

        def check(entry) -> Child:
            child = run_child([PYTHON, "-m", "npuprof_launch", "--check", entry[0]], base_env())
            if child.returncode != 0:
                raise RuntimeError(f"--check did not pass on the synthetic NPU output:\n{child.stdout[-2000:]}")
            return child

        runs = rounds_of(dirs, 1 if self.quick else 3, check)
        cpu = {key: median([c.cpu_s for c in children]) for key, children in runs.items()}
        wall = {key: median([c.wall_s for c in children]) for key, children in runs.items()}
        a, b, c = counts
        for letter, export in zip("cd", exports):
            t = {n: cpu[export, n] for n in counts}
            self.say(
                f"9{letter}. --check at {a}/{b}/{c} NPU ranks, {export} export, with step times: "
                f"{'/'.join(f'{t[n]:.2f}' for n in counts)} s CPU; ratios {c}/{b} {t[c] / t[b]:.2f} and "
                f"{b}/{a} {t[b] / t[a]:.2f} (linear: 2.00); {dirs[export, c][1] / c / 1e6:.2f} MB of "
                f"parse output a rank; wall {'/'.join(f'{wall[export, n]:.2f}' for n in counts)} s; "
                f"median of {len(runs[export, a])}"
            )
        for path, _ in dirs.values():
            shutil.rmtree(path, ignore_errors=True)


def hook_cost(results: list[dict]) -> tuple[tuple[float, float, int], tuple[float, float, int]]:
    """Per-step cost of the hooks (attached - detached) and the control (detached - detached), from job.py rounds."""
    cost = [a - d for r in results for a, d in zip(r["attached_us"], r["detached_us"])]
    control = [c - d for r in results for c, d in zip(r["control_us"], r["detached_us"])]
    return summary(cost), summary(control)


def process_ratios(results: list[dict], bare: list[dict]) -> list[float]:
    """Median step time of each process of one arm over that of the bare process of the same round."""
    return [median(a["attached_us"]) / median(b["attached_us"]) for a, b in zip(results, bare)]


def summary(values: list[float]) -> tuple[float, float, int]:
    """Median, its standard error (from the interquartile range, robust to the outliers a shared machine makes), n."""
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    sigma = (quartiles[2] - quartiles[0]) / 1.349
    return median(values), 1.2533 * sigma / len(values) ** 0.5, len(values)


def spread(figure: tuple[float, float, int]) -> str:
    middle, error, count = figure
    return f"{middle:+.2f} +- {error:.2f} us (median of {count})"


def callgrind_instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions executed by ``argv``: callgrind's total, the same from run to run."""
    child = run_child(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env)
    match = re.search(r"Collected\s*:\s*(\d+)", child.stderr)
    if child.returncode != 0 or match is None:
        raise RuntimeError(f"callgrind failed (exit {child.returncode}):\n{child.stderr[-2000:]}")
    return int(match.group(1))


def _fresh(path: str) -> str:
    """``path`` emptied (it may be on the slow filesystem, where scratch's workdir is not)."""
    shutil.rmtree(path, ignore_errors=True)
    return path


def check_arm(results: list[dict], state: str) -> None:
    """Refuse figures from an arm that is not what it claims (the clock absent, a window in the wrong arm).

    A profiler still recording after the last window would also be refused.
    """
    for result in results:
        if not result.get("hooks") or result.get("clock_state") != state or result.get("profiler_on"):
            raise RuntimeError(f"expected the tool's hooks and a session in state {state!r}, got {result}")


def check_traces(child: Child, out: str, active: int) -> None:
    """A whole-run arm counts only if it wrote one trace of ``active`` profiled steps."""
    if child.returncode != 0:
        raise RuntimeError(f"the whole-run job failed (exit {child.returncode}):\n{child.stderr[-2000:]}")
    paths = [os.path.join(out, name) for name in os.listdir(out) if name.endswith(names.TORCH_TRACE_SUFFIXES)]
    counts = [deliverables.count_profiler_steps(path) for path in paths]
    if counts != [active]:
        raise RuntimeError(f"expected one trace of {active} steps in {out}, got {counts}")


def _check_npu_output(path: str, ranks: int) -> None:
    """Refuse an NPU output whose ``--check`` fails, that does not read every rank's collectives
    (its steps, and the HCCL operations the judge of which rank the others wait for compares), or
    whose judge does not name the rank figure 9a's does, by the same rule."""
    import synthetic_output

    child = run_child([PYTHON, "-m", "npuprof_launch", "--check", path, "--json"], base_env())
    answer = json.loads(child.stdout) if child.returncode == 0 else {}
    named = [f for f in answer.get("findings") or () if f.get("kind") == "waited_for_rank"]
    evidence = named[0].get("evidence") or {} if len(named) == 1 else {}
    processes = answer.get("processes") or []
    read = [p for p in processes if p.get("collectives_read") and p.get("profiler_steps") == 3]
    if (
        not answer.get("passed")
        or evidence.get("rule") != "per_collective"
        or not evidence.get("rounds")
        or named[0].get("ranks") != [synthetic_output.LATE_RANK]
    ):
        raise RuntimeError(f"--check did not judge the synthetic NPU output's collectives:\n{child.stdout[-2000:]}")
    if len(processes) != ranks or len(read) != ranks:
        raise RuntimeError(f"--check read the collectives of {len(read)} of {ranks} NPU ranks in {path}")


def machine() -> str:
    """CPU model, cores, load, Python and torch versions: a figure means little without them."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "not installed"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {model}, {os.cpu_count()} cores, load {load}; Python {platform.python_version()}, "
        f"torch {torch_version}, {platform.system()} {platform.release()}"
    )


def device_name(device: str) -> str:
    """The accelerator's name, asked of torch in a child: this process never imports torch."""
    code = "import sys, torch; print(torch.cuda.get_device_name(sys.argv[1]), torch.__version__)"
    child = run_child([PYTHON, "-c", code, device], base_env())
    return child.stdout.strip() if child.returncode == 0 else f"unknown ({child.stderr.strip()[-200:]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: checks that every figure runs")
    parser.add_argument("--device", default="cpu", help="where the jobs of figures 2 to 4 put their model (cuda)")
    parser.add_argument(
        "--only",
        default="1,2,3,4,5,6,7,8,9,10",
        help="the figures to measure, e.g. 2,3 (4 comes with 2, 7 with 6; 9 is 9a to 9d, 9c the NPU ones alone)",
    )
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    print(f"npuprof-launch overhead benchmark ({'quick: indicative only' if args.quick else 'full'})", flush=True)
    print(machine(), flush=True)
    if args.device != "cpu":
        print(f"model on {args.device}: {device_name(args.device)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="npuprof-bench-") as workdir:
        bench = Bench(args.quick, workdir, args.device)
        if "1" in only:
            bench.startup()
            bench.idle_torch()
        clock_runs = bench.step_clock() if only & {"2", "4"} else None
        if "3" in only:
            bench.whole_run()
        if clock_runs is not None:
            bench.memory(clock_runs)
        if "5" in only:
            bench.check_scaling()
        if only & {"6", "7"}:
            bench.window_end(stall="6" in only)
        if "8" in only:
            bench.step_times_cost()
        if "9" in only:
            bench.summary_scaling()
        if only & {"9", "9c"}:
            bench.npu_check_scaling()
        if "10" in only:
            bench.hang_watch_cost()
    print(f"load at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
