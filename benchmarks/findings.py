"""How far the job's answer can be trusted, from real runs: ``python benchmarks/findings.py``.

Every run is real: npuprof-run around torchrun (gloo on the CPU) around findings_job.py (or the job
alone, for one rank), and the verdict is the one a user reads, ``npuprof-run --check DIR --json``.
Two rates come out:

* false findings: healthy runs, the window early, so that the tool's own steps and its aftercare
  fall among the job's. Goal: nothing named (no slow rank, no rank waited for, no slowdown, no
  spike; in a job with an evaluation or a checkpoint every 10 steps, no spike off the period the
  answer tells, ``job.spike_period``). Until 2026-12-05 slowdowns were counted apart.
* detection: injected faults, found with the right rank (the first slow rank) or step (a spike on
  its step, a slowdown within SLOWDOWN_WITHIN steps, of that rank alone where one rank slowed).
  Goal: 95 % at least. The window comes after the faults' steps, so that a fault is not beside the
  tool's aftercare (that case is told undecidable by design: findings.spike_beside_aftercare).
* one-step windows, as a spike's suggested run records: healthy DDP runs (no rank may be named) and
  a 10x step 10 on rank 1 (its run must say the others waited for rank 1: job.waited_for).

The groups (``--group``): ``healthy`` and ``faults``, the first grid (2, 4 and 8 ranks, DDP and
alone, steps of 0.5, 5 and 50 ms, with and without busy processes; faults by sleeps on 50 ms steps);
``one-step``; ``new``, the shapes of real jobs, all beside busy processes (one rank; compute, not
sleeps: a rank on 1.1x-3x the rows, 3-, 13- and 30-step windows in DDP; DataLoader workers; gradient
accumulation; an evaluation and a checkpoint every 10 steps; two-second stalls; a slowdown of one
rank of independent ones and of all from step 40); ``hog``, every run beside busy processes (at
least --hogs, and LOAD with the ranks); ``all``. ``--list`` prints the runs chosen.

``--quick`` runs a small subset (two runs), for the tests; ``--only NAME,...`` the runs named.
``--keep DIR`` keeps each run's output, so that two rules are judged on the same traces:
``npuprof-run --check DIR/ROUND/NAME --json`` from each checkout.
On a busy 2-core machine a run takes 5-60 s (8 ranks import torch on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "findings_job.py")
PYTHON = sys.executable
HOG = "while True: pass"

#: Healthy runs: the window early (steps 3-5), as a user's first run has it.
HEALTHY_SCHEDULE = ["--skip-first", "2", "--active", "3"]
#: Faulty runs: 40 steps, the window late (steps 35-37: fault_schedule), the faults before it.
FAULT_STEPS = 40
#: A spike's suggested run: one recorded step, on the spike (rank 1's 10x step 10) or on a healthy
#: job's step; the answer is whom that step waited for (job.waited_for), or nothing.
ONE_STEP_SCHEDULE = ["--skip-first", "9", "--active", "1"]
#: Faults on steps of 50 ms: at 20 ms a 10 % sleep (2 ms) was within what a busy 2-core machine
#: does to a step, and the per-step test rightly found no rank standing out.
FAULT_STEP_MS = 50.0
#: The shapes of real jobs (findings_job.py): a DataLoader of 2 workers; an evaluation of 200 ms and
#: a checkpoint of 16 MB (written and flushed to disk) after every 10th step; compute on 512 rows a
#: step of 8 linear layers of 256 (about 20 ms on an idle core here).
LOADER = ["--loader-workers", "2"]
EVAL = ["--eval-every", "10", "--eval-ms", "200"]
CHECKPOINT = ["--checkpoint-every", "10", "--checkpoint-mb", "16"]
COMPUTE = ["--rows", "512"]
#: A slowdown is found when its step is this near the step where it began (a block boundary).
SLOWDOWN_WITHIN = 3
#: Busy processes beside a run marked ``hog``: two at least (until 2026-12-05: one), and as many as make
#: the load LOAD with the job's ranks (a one-rank job has three beside it): busy on 2 cores.
HOGS = 2
LOAD = 4


def healthy_cases() -> list[dict]:
    cases = []
    for ranks in (2, 4, 8):
        for ddp in (False, True):
            for step_ms in (0.5, 5.0, 50.0):
                for hog in (False, True):
                    name = f"healthy-{ranks}r-{'ddp' if ddp else 'alone'}-{step_ms:g}ms{'-hog' if hog else ''}"
                    steps = 20 if step_ms >= 50 else 30
                    cases.append(
                        {"name": name, "ranks": ranks, "ddp": ddp, "hog": hog, "steps": steps, "step_ms": step_ms}
                    )
    return cases


def fault_cases() -> list[dict]:
    cases = []
    for hog in (False, True):
        tail = "-hog" if hog else ""
        for frac in (0.1, 0.3, 1.0):
            for ranks in (2, 4):
                cases.append(
                    {
                        "name": f"slow-{ranks}r-alone-{frac:g}{tail}",
                        "ranks": ranks,
                        "ddp": False,
                        "hog": hog,
                        "job": ["--slow-rank", "1", "--slow-frac", str(frac)],
                        "expect": ("slow_rank", 1),
                    }
                )
            cases.append(
                {
                    "name": f"slow-4r-ddp-{frac:g}{tail}",
                    "ranks": 4,
                    "ddp": True,
                    "hog": hog,
                    "job": ["--slow-rank", "2", "--slow-frac", str(frac)],
                    "expect": ("slow_rank", 2),
                }
            )
        for ddp in (False, True):
            mode = "ddp" if ddp else "alone"
            cases.append(
                {
                    "name": f"spike-4r-{mode}{tail}",
                    "ranks": 4,
                    "ddp": ddp,
                    "hog": hog,
                    "job": ["--spike-rank", "1", "--spike-step", "20"],
                    "expect": ("spike", 20),
                }
            )
            cases.append(
                {
                    "name": f"slowdown-4r-{mode}{tail}",
                    "ranks": 4,
                    "ddp": ddp,
                    "hog": hog,
                    "job": ["--slowdown-step", "20", "--slowdown-factor", "1.5"],
                    "expect": ("slowdown", 20),
                }
            )
    for case in cases:
        case.update(steps=FAULT_STEPS, step_ms=FAULT_STEP_MS)
    return cases


def one_step_cases() -> list[dict]:
    cases = []
    for ranks in (2, 4):
        for step_ms in (5.0, 50.0):
            for hog in (False, True):
                name = f"{ranks}r-ddp-{step_ms:g}ms-one-step{'-hog' if hog else ''}"
                common = {"ranks": ranks, "ddp": True, "hog": hog, "steps": 16, "step_ms": step_ms}
                cases.append({"name": f"healthy-{name}", **common, "schedule": ONE_STEP_SCHEDULE})
                spike = ["--spike-rank", "1", "--spike-step", "10"]
                cases.append({"name": f"spike-{name}", **common, "schedule": ONE_STEP_SCHEDULE, "job": spike})
                cases[-1]["expect"] = ("waited_for", 1)
    return cases


def new_shape_cases() -> list[dict]:
    """The shapes of real jobs, beside the busy processes: one rank; compute, not sleeps;
    a DataLoader's workers; gradient accumulation; an evaluation and a checkpoint every 10 steps;
    stalls; a slowdown of one rank and of all."""
    cases = []

    def add(name: str, ranks: int, ddp: bool, steps: int, step_ms: float, job: list[str], **more) -> None:
        cases.append({"name": name, "ranks": ranks, "ddp": ddp, "hog": True, "steps": steps, "step_ms": step_ms})
        cases[-1].update(job=job, **more)

    shapes = {"": [], "-loader": LOADER, "-accum4": ["--accumulate", "4"]}
    for ranks, ddp in ((1, False), (2, False), (4, True)):
        mode = _mode(ranks, ddp)
        for shape, job in shapes.items():
            add(f"healthy-{mode}{shape}", ranks, ddp, 30, 20.0 if shape != "-accum4" else 5.0, job)
        add(f"healthy-{mode}-eval10", ranks, ddp, 45, 20.0, EVAL, period=10)
        add(f"healthy-{mode}-ckpt10", ranks, ddp, 45, 20.0, CHECKPOINT, period=10)
    add("healthy-1r-50ms", 1, False, 20, 50.0, [])
    add("healthy-8r-ddp-eval10", 8, True, 45, 20.0, EVAL, period=10)
    for ranks, ddp in ((2, False), (4, True)):
        everything = [*LOADER, "--accumulate", "2", *EVAL, *CHECKPOINT]
        add(f"healthy-{_mode(ranks, ddp)}-everything", ranks, ddp, 45, 10.0, everything, period=10)
    for ranks, ddp in ((1, False), (2, False), (2, True), (4, True)):
        add(f"healthy-{_mode(ranks, ddp)}-compute", ranks, ddp, 30, 0.0, COMPUTE)
    add("healthy-4r-ddp-compute-w13", 4, True, 30, 0.0, COMPUTE, schedule=late(13, 15))

    # A rank on more rows than the others: compute. In lockstep the per-collective judge needs
    # about 13 rounds at 4 ranks: 3-step windows show where the answer ends.
    def compute(rank: int, factor: float) -> list[str]:
        return [*COMPUTE, "--compute-rank", str(rank), "--compute-factor", str(factor)]

    for factor in (1.1, 1.3, 2.0, 3.0):
        for active in (3, 13):
            name, slow = f"compute-4r-ddp-{factor:g}x-w{active}", compute(2, factor)
            add(name, 4, True, 40, 0.0, slow, expect=("slow_rank", 2), schedule=late(active, 37))
        add(f"compute-2r-alone-{factor:g}x", 2, False, 40, 0.0, compute(1, factor), expect=("slow_rank", 1))
    slow = compute(2, 1.3)
    add("compute-4r-ddp-1.3x-w30", 4, True, 50, 0.0, slow, expect=("slow_rank", 2), schedule=late(30, 46))
    add("compute-4r-alone-1.3x", 4, False, 40, 0.0, slow, expect=("slow_rank", 2))
    for factor in (1.3, 2.0):
        slow = compute(1, factor)
        add(f"compute-2r-ddp-{factor:g}x-w13", 2, True, 40, 0.0, slow, expect=("slow_rank", 1), schedule=late(13, 37))

    # A stall: one rank's step 20 two seconds longer (40 steps of 50 ms more).
    for ranks, ddp, shape, job in (
        (1, False, "", []),
        (2, False, "", []),
        (4, True, "", []),
        (8, True, "", []),
        (4, True, "-loader", LOADER),
        (2, False, "-accum4", ["--accumulate", "4"]),
    ):
        stall = ["--spike-rank", str(min(ranks - 1, 1)), "--spike-step", "20", "--spike-factor", "41"]
        add(f"stall-{_mode(ranks, ddp)}{shape}", ranks, ddp, 40, 50.0, [*job, *stall], expect=("spike", 20))

    # Slowdowns from step 40, twice as slow: of rank 1 of independent ranks, and of every rank.
    one = ["--slowdown-step", "40", "--slowdown-factor", "2", "--slowdown-rank", "1"]
    for ranks, shape, step_ms, job in (
        (2, "", 50.0, []),
        (2, "-loader", 50.0, LOADER),
        (2, "-accum4", 12.5, ["--accumulate", "4"]),
        (2, "-compute", 0.0, COMPUTE),
        (4, "", 50.0, []),
    ):
        add(
            f"slowdown-rank1-{ranks}r-alone{shape}",
            ranks,
            False,
            60,
            step_ms,
            [*job, *one],
            expect=("slowdown_rank", 40, 1),
        )
    for ranks, ddp in ((1, False), (2, False), (2, True), (4, True)):
        add(f"slowdown-all-{_mode(ranks, ddp)}", ranks, ddp, 60, 50.0, one[:4], expect=("slowdown", 40))

    # A rank sleeping a whole step more, in the shapes of real jobs.
    slow = ["--slow-rank", "1", "--slow-frac", "1"]
    for ranks, ddp, shape, job, period in (
        (4, True, "-loader", LOADER, None),
        (4, True, "-accum4", ["--accumulate", "4"], None),
        (2, False, "-eval10", EVAL, 10),
        (2, False, "-ckpt10", CHECKPOINT, 10),
    ):
        add(
            f"slow-{_mode(ranks, ddp)}{shape}-1",
            ranks,
            ddp,
            45,
            20.0,
            [*job, *slow],
            expect=("slow_rank", 1),
            period=period,
        )
    for case in cases:
        case["group"] = "new"
    return cases


def late(active: int, last: int) -> list[str]:
    """A window of ``active`` steps that ends on step ``last``."""
    return ["--skip-first", str(last - active), "--active", str(active)]


def _mode(ranks: int, ddp: bool) -> str:
    return "1r" if ranks == 1 else f"{ranks}r-{'ddp' if ddp else 'alone'}"


#: The quick subset: a fault clear of a loaded machine's jitter on 50 ms steps (a rank sleeping a
#: whole step more), so that the test that runs it holds on a busy 2-core machine.
QUICK = ("healthy-2r-alone-5ms", "slow-2r-alone-1")


def all_cases() -> list[dict]:
    """Every run, each with its group (healthy, faults, one-step, new); the new shapes first."""
    cases = new_shape_cases()
    for group, more in (("healthy", healthy_cases()), ("faults", fault_cases()), ("one-step", one_step_cases())):
        cases += [{**case, "group": group} for case in more]
    return cases


GROUPS = ("new", "healthy", "faults", "one-step", "hog", "all")


def groups(case: dict) -> set[str]:
    """The groups a run is in: its own, "hog" beside the busy processes, and "all"."""
    return {case["group"], "all", *(("hog",) if case["hog"] else ())}


@contextlib.contextmanager
def hog(count: int):
    """``count`` processes that keep a core busy each, beside the job."""
    busy = [subprocess.Popen([PYTHON, "-c", HOG]) for _ in range(count)]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


class Load:
    """The machine's load during a run: the tasks running or ready to run, counted every SAMPLE_S
    (``/proc/loadavg``'s fourth field, less this reader), their mean; and the one-minute average
    (what ``uptime`` prints first) at the run's end, which lags a run of 10 s."""

    SAMPLE_S = 0.25

    def __init__(self) -> None:
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.minute = float(_loadavg()[0])

    def _sample(self) -> None:
        while not self._stop.wait(self.SAMPLE_S):
            self.samples.append(int(_loadavg()[3].split("/")[0]) - 1)

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples) if self.samples else 0.0


def _loadavg() -> list[str]:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return handle.read().split()


def run_case(case: dict, scratch: str, hogs: int) -> dict:
    """One real run and its verdict: the job object of ``--check --json``, and the load during it."""
    out = os.path.join(scratch, case["name"])
    job = [JOB, "--steps", str(case["steps"]), "--step-ms", str(case["step_ms"]), *case.get("job", [])]
    if case["ddp"]:
        job.append("--ddp")
    if case["ranks"] > 1:
        job = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(case["ranks"]), *job]
    else:
        job = [PYTHON, *job]
    schedule = case.get("schedule") or (fault_schedule(case["steps"]) if "expect" in case else HEALTHY_SCHEDULE)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    started = time.monotonic()
    with hog(max(hogs, LOAD - case["ranks"]) if case["hog"] else 0), Load() as loaded:
        ran = subprocess.run(
            [PYTHON, "-m", "npuprof_launch", *schedule, "--output-dir", out, "--", *job],
            env=env,
            capture_output=True,
            text=True,
        )
    seconds = time.monotonic() - started
    check = subprocess.run(
        [PYTHON, "-m", "npuprof_launch", "--check", out, "--json"], env=env, capture_output=True, text=True
    )
    try:
        report = json.loads(check.stdout)
    except json.JSONDecodeError:
        report = {"job": {}, "problems": [f"--check printed no JSON: {check.stderr[-300:]}"]}
    # The answer's problems are items (schema version 2): their sentences, for this table's last column.
    problems = [p["text"] if isinstance(p, dict) else p for p in report.get("problems") or ()]
    if ran.returncode != 0:
        problems.append(f"the run exited {ran.returncode}: {ran.stderr[-300:]}")
    job_of = report.get("job") or {}
    return {
        "case": case,
        "job": job_of,
        "problems": problems,
        "s": seconds,
        "load": loaded.mean,
        "load_1m": loaded.minute,
    }


def fault_schedule(steps: int) -> list[str]:
    """A faulty run's window: three steps near its end, after the faults' steps."""
    return ["--skip-first", str(steps - 6), "--active", "3"]


def false_findings(result: dict) -> dict[str, list]:
    """A healthy run's findings, by kind: slow ranks, waited-for ranks, ranks held back by the
    machine (heldback.py: a busy machine's waits must not stay on one rank), slowdowns, spikes and a
    period (``job.spike_period``: "what the job does every N steps is where to look"). In a job
    with work every ``case["period"]`` steps (an evaluation, a checkpoint) a period of that many
    steps is right, and the spikes on it are explained; elsewhere a period is a false finding too."""
    job, every = result["job"], result["case"].get("period")
    period = job.get("spike_period") or {}
    right = bool(period) and period.get("every") == every
    explained = set(period.get("steps") or ()) if right else set()
    return {
        "slow rank": [s.get("rank") for s in job.get("slow_ranks") or ()],
        "waited-for": [s.get("rank") for s in job.get("waited_for") or ()],
        "held back": [s.get("rank") for s in job.get("held_back") or ()],
        "slowdown": [s.get("step") for s in job.get("slowdowns") or ()],
        "spike": [s.get("step") for s in job.get("spikes") or () if s.get("step") not in explained],
        "period": [] if right or not period else [period.get("every")],
    }


def judge(result: dict) -> tuple[str, str]:
    """("ok" | "FALSE" | "found" | "MISSED" | "ERROR", what the answer said)."""
    case, job = result["case"], result["job"]
    slow = [s.get("rank") for s in job.get("slow_ranks") or ()]
    spikes = [s.get("step") for s in job.get("spikes") or ()]
    slowdowns = [(s.get("step"), s.get("ranks")) for s in job.get("slowdowns") or ()]
    waited = [s.get("rank") for s in job.get("waited_for") or ()]
    held = [s.get("rank") for s in job.get("held_back") or ()]
    period = job.get("spike_period")
    told = f"every {period['every']}: {period['steps']}" if period else "-"
    said = (
        f"slow {slow or '-'}, spikes {spikes or '-'}, slowdowns (step, ranks) {slowdowns or '-'}, "
        f"waited for {waited or '-'}, period {told}" + (f", held back {held}" if held else "")
    )
    if not job:
        return "ERROR", "; ".join(result.get("problems") or ())[:200]
    if "expect" not in case:
        return ("FALSE" if any(false_findings(result).values()) else "ok"), said
    kind, value, *rank = case["expect"]
    if kind == "slow_rank":
        hit = slow[:1] == [value]
    elif kind == "waited_for":
        hit = waited == [value]
    elif kind == "spike":
        hit = value in spikes
    else:  # a slowdown near its step; of one rank, of that rank alone
        hit = any(abs(step - value) <= SLOWDOWN_WITHIN and (not rank or ranks == rank) for step, ranks in slowdowns)
    return ("found" if hit else "MISSED"), said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small subset: " + ", ".join(QUICK))
    parser.add_argument("--only", default="", help="comma-separated run names")
    parser.add_argument("--group", default="", help="comma-separated groups: " + ", ".join(GROUPS))
    parser.add_argument("--list", action="store_true", help="print the runs chosen, with their groups, and stop")
    parser.add_argument(
        "--hogs",
        type=int,
        default=HOGS,
        help=f"busy processes beside a run marked hog (more where ranks + them < {LOAD})",
    )
    parser.add_argument("--repeat", type=int, default=1, help="run the runs chosen this many times, round by round")
    parser.add_argument("--json", help="write every run's verdict to this file (after each run)")
    parser.add_argument("--verdicts", help="judge the runs stored by --json in this file again, and run nothing")
    parser.add_argument(
        "--keep",
        help="keep every run's output directory under this folder (ROUND/NAME): npuprof-run --check of another "
        "checkout judges the same traces",
    )
    args = parser.parse_args()
    if args.verdicts:
        with open(args.verdicts, encoding="utf-8") as handle:
            results = json.load(handle)
        defined = {case["name"]: case for case in all_cases()}
        for result in results:  # a run is judged by its case as defined now, found by its name
            result["case"] = defined.get(result["case"]["name"], result["case"])
            result["verdict"], result["said"] = judge(result)
            say(result)
        summarize(results)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the busy processes beside a run are ended
    cases = all_cases()
    names = {case["name"] for case in cases}
    chosen = set(QUICK) if args.quick else {name for name in args.only.split(",") if name}
    wanted = {group for group in args.group.split(",") if group}
    unknown = sorted((chosen - names) | (wanted - set(GROUPS)))
    if unknown:
        parser.error(f"no run or group named {', '.join(unknown)} (--list prints the runs, --help the groups)")
    if chosen:
        cases = [case for case in cases if case["name"] in chosen]
    if wanted:
        cases = [case for case in cases if groups(case) & wanted]
    if args.list:
        for case in cases:
            print(f"{case['name']:36} {' '.join(sorted(groups(case)))}")
        print(f"{sum('expect' not in c for c in cases)} healthy, {sum('expect' in c for c in cases)} faults")
        return
    results = []
    with contextlib.ExitStack() as stack:
        scratch = args.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="npuprof-findings-"))
        for round_, case in ((round_, case) for round_ in range(1, args.repeat + 1) for case in cases):
            os.makedirs(os.path.join(scratch, str(round_)), exist_ok=True)
            result = run_case(case, os.path.join(scratch, str(round_)), args.hogs)
            result["round"] = round_
            result["verdict"], result["said"] = judge(result)
            results.append(result)
            say(result)
            if args.json:
                with open(args.json, "w", encoding="utf-8") as handle:
                    keys = ("case", "round", "job", "problems", "verdict", "said", "s", "load", "load_1m")
                    json.dump([{k: r[k] for k in keys} for r in results], handle, indent=1)
    summarize(results)


def say(result: dict) -> None:
    """A run's line: its name, verdict, time, load (mean, and the one-minute average) and answer."""
    print(
        f"{result['case']['name']:36} {result['verdict']:7} {result['s']:5.1f} s  load {result['load']:4.1f} "
        f"({result['load_1m']:4.1f})  {result['said']}",
        flush=True,
    )


def summarize(results: list[dict]) -> None:
    """The two rates, each against its goal, and the machine's load over the runs."""
    healthy = [r for r in results if "expect" not in r["case"] and r["verdict"] != "ERROR"]
    faults = [r for r in results if "expect" in r["case"] and r["verdict"] != "ERROR"]
    errors = sum(1 for r in results if r["verdict"] == "ERROR")
    if healthy:
        kinds = [false_findings(r) for r in healthy]
        counts = ", ".join(f"{sum(bool(k[kind]) for k in kinds)} {kind}" for kind in kinds[0])
        false = sum(1 for r in healthy if r["verdict"] == "FALSE")
        print(
            f"false findings: {false} of {len(healthy)} healthy runs named something ({counts})  "
            f"[goal 0: {'met' if not false else 'MISSED'}]"
        )
    if faults:
        found = sum(1 for r in faults if r["verdict"] == "found")
        rate = found / len(faults)
        print(
            f"detection: {found} of {len(faults)} injected faults found with the right rank or step ({rate:.0%})  "
            f"[goal >= 95 %: {'met' if rate >= 0.95 else 'MISSED'}]"
        )
    if errors:
        print(f"{errors} runs gave no verdict (see ERROR above)")
    hogged = sorted(r["load"] for r in results if r["case"]["hog"])
    if hogged:
        minute = sorted(r["load_1m"] for r in results if r["case"]["hog"])
        print(
            f"load beside the busy processes: {hogged[0]:.1f} to {hogged[-1]:.1f} tasks running or ready, "
            f"median {hogged[len(hogged) // 2]:.1f} (a run's mean); the one-minute average at a run's end "
            f"{minute[0]:.1f} to {minute[-1]:.1f}"
        )


if __name__ == "__main__":
    main()
