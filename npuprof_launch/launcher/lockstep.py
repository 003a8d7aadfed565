"""In lockstep, the rank the others wait for: read from each collective of the window, else from the
time each rank's window spent in collectives.

In a synchronous data-parallel job every rank's step takes as long as the slowest one's, so step
times cannot name the straggler; the window's traces can: the rank that waits least in its
collectives is the one the others wait for. Where the traces tell each collective apart, the rank
that the rounds of collectives wait for more often than chance allows is named (collectives.py:
rule PER_COLLECTIVE); elsewhere (an old torch, a backend without those events) and where the window
holds too few rounds, by its total time in collectives against the others' (msprof-analyze's
slow-rank method, and Holistic Trace Analysis's: rule TOTAL_TIME). The rules below are how much of
that evidence a few recorded steps on a busy machine can bear; each says what it was tried on. Pure:
the report rows come with ``collective_s``, ``window_s`` and their COLLECTIVES read from the traces.
"""

from __future__ import annotations

from npuprof_launch.common import findings, stepstats
from npuprof_launch.launcher import collectives, cputime, refusals, stepwaits, wording
from npuprof_launch.launcher.wording import span_ms as _span_ms
from npuprof_launch.launcher.wording import wait_ms as _wait_ms

#: The rule a finding or "no rank stands out" rests on (its evidence's ``rule``).
PER_COLLECTIVE = "per_collective"
TOTAL_TIME = "total_time"
CPU_TIME = cputime.CPU_TIME
DEVICE_TIME = cputime.DEVICE_TIME
#: Where a report row holds its window's collectives: they are no part of the row's JSON.
COLLECTIVES = stepwaits.COLLECTIVES
#: ...and whether they were all gloo's (tensors on the CPU: the stepping thread's time on a CPU is
#: its compute; with NCCL it is kernel launches and a spin at each synchronization).
ON_CPU = stepwaits.ON_CPU
#: ...and, from an NPU session's step trace, its device's computing time by step (the job's
#: numbering): the NPU's own work, judged as a CPU thread's time is (cputime.py).
DEVICE = "_device_compute"
#: Each collective apart, from windows of this many recorded steps: in one step, a rank the machine
#: or the job held back once is the last in every collective after that moment.
EACH_MIN_STEPS = 2

#: In lockstep: a rank whose time in collectives is below this fraction of the others' median (and
#: beyond their spread) is the one they wait for, when they spend at least COLLECTIVE_SHARE of their
#: window in collectives and the window held COLLECTIVE_MIN_STEPS recorded steps.
COLLECTIVE_RATIO = 0.25
#: ...or below this one when three ranks or more are the others: each of them waiting far longer
#: is evidence one busy moment cannot give (tried: examples/stragglers.py's rank 2, 30 ms slower a
#: step, waited 0.30 of the other three's time, each of them within 13 % of another, and at 0.25
#: no rank stood out).
COLLECTIVE_RATIO_MANY = 0.4
COLLECTIVE_SHARE = 0.10
COLLECTIVE_MIN_STEPS = 3
COLLECTIVE_WAIT_STEPS = 1.0
#: ...or of the slow rank's whole recorded step, when the window left its own time a recorded step
#: outside collectives within this factor of the job's median step, or past it by this share of the
#: others' extra wait at most (the rest of the wait is the job's).
COLLECTIVE_UNINFLATED = 1.1
COLLECTIVE_INFLATION_SHARE = 0.25
COLLECTIVE_MIN_WAIT = 0.3
#: ...and only when its own time in the window outside collectives is longer than the others' by
#: this share of their extra wait at least (_why_not_its_work).
COLLECTIVE_WORK_SHARE = 0.5
COLLECTIVE_WINDOW_STEPS = 3.0
#: A window too short to name a slow rank (a suggested run's one step on a spike) still tells whom
#: the others waited for in its steps, when their extra wait a recorded step is this many of the
#: job's median steps at least (a spike's size: alike ranks' arrival order moves it by a fifth of
#: a step; the healthy one-step windows of F12, beside two CPU hogs, at most 0.82 of one before their
#: wait for a CPU was taken off, and 0.05 after; a 5 ms job's 45 ms spike, 2.6x and 2.8x after it: a
#: bar of 3 missed both)...
ONE_OFF_WAIT_STEPS = 2.0
#: ...and that rank's own work there (its window outside collectives, less its wait for a CPU) is
#: this many times the others' (theirs less their waits for a CPU) at least: their profilers cost
#: them alike, so a rank whose own time the profiler alone made long has no such margin (tried: a
#: 0.5 ms job's recorded steps took 40 ms, 1.3x). Beside two CPU hogs (2026-12-06, 26 one-step
#: windows of a 45 ms and a 450 ms spike, 32 healthy ones): the spikes' 2.9x-13x; the healthy
#: ones' 0.07x-2.8x, each past 1.5x waited for less than a step more (a bar of 3 missed a spike).
ONE_OFF_WORK_RATIO = 2.5
#: A rank whose thread ran longest on a CPU is not named when the rounds of collectives waited for
#: it less often than this lower tail of chance allows: the rounds say the others waited for
#: someone else. Not "at least as often as chance": beside two CPU hogs the order moves so much that a
#: rank on 30 % more rows was the last in 5 of 13 rounds at 4 ranks (3.25 by chance) and alike ranks
#: in 6 of 13.
LAST_LEVEL = 0.05


def slow_ranks(group: list[dict]) -> tuple[list[tuple[dict, dict]], str | None, dict]:
    """In lockstep: the rank the others wait for, ``(process, finding)`` each; why none is, when
    the ranks are in lockstep and none is named; and that verdict's evidence (its ``rule``, counts).

    Each collective apart first (collectives.judge, _by_each), where every rank's window tells them
    and holds EACH_MIN_STEPS recorded steps; where it names no rank, the time each rank's stepping
    thread ran on a CPU, or its NPU computed (cputime.judge, _by_cpu_time); then
    the verdict of each collective apart stands where it held enough rounds to name a rank. Else
    the total time in collectives (_by_total_time), which says, when the rounds were too few, how
    many there were and which window would hold enough. A "no rank stands out" adds what the time
    on a CPU showed."""
    measured = _measured(group)
    if len(measured) < 2:
        return [], None, {}
    each = _each(measured)
    if each is not None and each["named"]:
        return _by_each(measured, each)
    ran, ran_why, ran_top = _by_cpu_time(measured, each)
    if ran:
        return ran, None, {}
    if each is not None and each["decided"]:
        found, why, evidence = _by_each(measured, each)
    else:
        found, why = _by_total_time(measured)
        short = _too_few(each)
        for _, finding in found:
            finding.update({"rule": finding.get("rule", TOTAL_TIME), **short})
        evidence = {"rule": TOTAL_TIME, **short} if why is not None else {}
        held = stepwaits.recorded_steps(min(measured, key=lambda p: p["collective_s"]))  # whose why it is
        if why is not None and held < COLLECTIVE_MIN_STEPS:  # judged by no rule: wording.unjudged
            evidence.update(recorded_steps=held, window_steps_needed=COLLECTIVE_MIN_STEPS)
        reached = _by_reach(measured) if why is not None else None
        if reached and reached["named"]:
            process = next(p for p in measured if p["rank"] == reached["rank"])
            return [(process, stepwaits.reach_finding(process, measured, reached, short))], None, {}
        if reached and why is not None:
            why += f"; {stepwaits.reach_text(reached, reached['step_s'])}"
            evidence[stepwaits.REACHED_LAST] = {key: reached[key] for key in ("rank", "steps", "least_s", "needed_s")}
    if why is not None and ran_why:
        why += f"; {ran_why}"
        evidence[ran_top.pop("rule")] = ran_top  # cpu_time or device_time
    return found, why, evidence


def _by_reach(measured: list[dict]) -> dict | None:
    """The verdict of each step's reach (stepwaits.reached_last), with the job's step; None where it
    cannot be judged."""
    step_s = _job_step(measured)
    verdict = stepwaits.reached_last(measured, step_s) if step_s else None
    return {**verdict, "step_s": step_s} if verdict else None


def too_few_text(verdict: dict) -> str:
    """What a "no rank stands out" of the total time adds where each collective apart had too few
    rounds: the fewest that name a rank the last in every one, and a window that holds them."""
    if not verdict.get("rounds_needed"):
        return ""
    rounds, needed, steps = verdict["rounds"], verdict["rounds_needed"], verdict["window_steps_needed"]
    return f"; collective by collective, {rounds} rounds, {needed} at least: a window of {steps} steps or more can name a rank"  # noqa: E501


def _each(measured: list[dict]) -> dict | None:
    """The verdict of each collective apart (collectives.judge), where every rank's window tells its
    collectives, the ranks are in lockstep (their median spends COLLECTIVE_SHARE of its window in
    collectives) and every window held EACH_MIN_STEPS recorded steps; None elsewhere."""
    lists = {p["rank"]: p[COLLECTIVES] for p in measured if p.get(COLLECTIVES) is not None}
    if len(lists) < len(measured):  # a rank whose trace does not tell them, or two rows of one rank
        return None
    share = stepstats.quantile(sorted(p["collective_s"] / p["window_s"] for p in measured), 0.5)
    if share < COLLECTIVE_SHARE or min(stepwaits.recorded_steps(p) for p in measured) < EACH_MIN_STEPS:
        return None
    cpu = {p["rank"]: stepwaits.cpu_wait_by_step(p) for p in measured}
    hosts = {p["rank"]: p.get("host") for p in measured}
    return collectives.judge(lists, cpu=cpu, ran=cputime.ran_of(measured), hosts=hosts)


def _by_each(measured: list[dict], each: dict) -> tuple[list[tuple[dict, dict]], str | None, dict]:
    """The ranks each collective apart names; else why none is, with the rank the test picked first."""
    by_rank = {p["rank"]: p for p in measured}
    found: list[tuple[dict, dict]] = []
    refused: list[str] = []
    read = sorted({source for p in measured for source in p.get("collectives_read") or ()})  # NPU data
    source = f" (HCCL's operations, from {', '.join(read)})" if read else ""
    for named in each["passed"]:
        process = by_rank[named["rank"]]
        wait_s = named["wait_per_step_s"]
        window = process.get("window_label") or "its window"
        if named["why_not"] is not None:
            head = f"in lockstep, rank {named['rank']} was the last in {_counts(named, each)} in {window}; no finding:"
            refused.append(f"{head} {refusals.text(named)}")
            continue
        if not any(named is kept for kept in each["named"]):
            continue  # the same rank, late in another group too: named once, by its strongest
        cpu_s = stepwaits.cpu_excess(process, [p for p in measured if p is not process]) / len(named["steps"])
        host = f"; so are most ranks of its host, {each['host']}" if each.get("host") else ""
        finding = {
            "rank": named["rank"],
            "method": "collectives",
            "rule": PER_COLLECTIVE,
            "last_in": named["last_in"],
            "rounds": named["rounds"],
            "collectives": named["collectives"],
            "ranks_compared": named["ranks_compared"],
            "counted": named.get("counted", "rounds"),
            "steps_last_often": named["steps_last_often"],
            "halves_last_in": named["halves_last_in"],
            "early_ranks": named.get("early_ranks", []),
            "group": named["group"],
            "p_value": named["p_value"],
            "level": each["level"],
            "test": each["test"],
            "wait_per_step_s": wait_s,
            "cpu_wait_per_step_s": cpu_s,
            "steps": len(named["steps"]),
            "host": each.get("host"),
            "read_from": read or None,
            "evidence": f"in {window} it was the last in {_counts(named, each)}: the others waited "
            f"{wait_s * 1e3:.1f} ms a step longer{host}{source}{_early_text(named)}",
        }
        found.append((process, finding))
    if found:
        return found, None, {}
    top = each["top"] or {}
    if refused:
        why = refused[0]
    elif top:
        of_rounds = f"of the {each['rounds']} " if top["rounds"] == each["rounds"] else ""  # groups' differ
        why = (
            f"in lockstep, no rank was the last in more {of_rounds}rounds of collectives than "
            f"chance allows: rank {top['rank']} most often, {_counts(top, each)}"
        )
    else:
        why = "in lockstep, no collective of the window was on every rank"
    evidence = {"rule": PER_COLLECTIVE, "rounds": each["rounds"], "collectives": each["collectives"]}
    evidence["level"] = each["level"]
    if top:
        evidence.update(rank=top["rank"], last_in=top["last_in"], p_value=top["p_value"])
    return [], why, evidence


def _by_cpu_time(measured: list[dict], each: dict | None) -> tuple[list[tuple[dict, dict]], str | None, dict]:
    """In lockstep, where every rank's own work by step is known (cputime.work_by_step: its stepping
    thread's time on a CPU with gloo, its NPU's computing time on Ascend): the ranks that ran longer
    than chance allows (cputime.judge), each named unless the rounds of collectives waited for it
    less often than chance allows (LAST_LEVEL: its extra work hidden behind another rank's wait, or
    a thread that runs longer for spinning while it waits); else what the time showed, for "no rank
    stands out", and its evidence.
    Nothing where the judge could not be made.

    Not the time in collectives: beside two CPU hogs a rank on 30 % more rows, the longest on a CPU
    in 13 of 13 steps at 1.30x, spent 1170 ms of its window in them against 1104-1182 ms; each
    rank's gloo threads wait for a CPU there too."""
    if each is None:
        return [], None, {}
    if stepstats.quantile(sorted(p["collective_s"] / p["window_s"] for p in measured), 0.5) < COLLECTIVE_SHARE:
        return [], None, {}
    ran, rule = cputime.work_by_step(measured, all(p.get(ON_CPU) for p in measured), DEVICE)
    if ran is None:
        return [], None, {}
    # A pipeline's stages differ in work by design: each other stage is no alike rank to beat.
    each_other = bool(each["rounds"]) and cputime.each_other(measured, rule)
    verdict = cputime.judge(ran, each=each_other)
    by_rank = {p["rank"]: p for p in measured}
    if not each["rounds"]:  # sends and receives only (a pipeline's): its time in them, not the rounds
        return cputime.named_by_sends(measured, verdict, rule), None, {}
    chance = 1 / max(len(each["last_by_rank"]), 1)
    lasts = {named["rank"]: each["last_by_rank"].get(named["rank"]) for named in verdict["named"]}
    waited = [
        named
        for named in verdict["named"]
        if (last := lasts[named["rank"]]) is not None
        and 1 - findings.binomial_tail(last + 1, each["rounds"], chance) >= LAST_LEVEL
    ]
    # In lockstep the others wait for the longest: a rank the first named outran by the margin hides
    # behind it (tried: beside the findings benchmark, a rank at 1.21x next to the 1.50x one).
    waited = [one for one in waited if one["ran_per_step_s"] * cputime.RATIO >= waited[0]["ran_per_step_s"]]
    host = collectives.slow_host(waited, {p["rank"]: p.get("host") for p in measured}, list(ran))
    found = []
    for named in waited:
        process, last = by_rank[named["rank"]], lasts[named["rank"]]
        window = process.get("window_label") or "its window"
        at = f"; so are most ranks of its host, {host}" if host else ""
        beside = " and the steps beside it" if rule == CPU_TIME else ""  # the NPU's: the window's steps only
        where = f"{cputime.did(rule)} {cputime.text(named)} ({window}{beside})"
        finding = {
            "method": "collectives",
            "rule": rule,
            **named,
            "level": verdict["level"],
            "test": verdict["test"],
            "last_in": last,
            "rounds": each["rounds"],
            "host": host,
            "evidence": f"{where}, and it was the last in {last} of {each['rounds']} rounds of collectives: in "
            f"lockstep the others wait for its work, {named['extra_per_step_s'] * 1e3:.1f} ms a step{at}",
        }
        found.append((process, finding))
    top = verdict["top"]
    if found or top is None:
        return found, None, {}
    why = f"by time on a CPU, rank {top['rank']} ran {cputime.text(top)}"
    if rule == DEVICE_TIME:
        why = f"by its NPU's computing time, rank {top['rank']} computed {cputime.text(top)}"
    if top["p_value"] < verdict["level"] and top["ratio"] < cputime.RATIO:
        why += f", under the {cputime.RATIO:g}x by which alike ranks' threads can differ on a shared machine"
    elif top["p_value"] < verdict["level"] and each_other and top not in verdict["named"]:
        most = top["others_most_per_step_s"] * 1e3
        why += f", under {cputime.RATIO:g}x another rank's {most:.1f} ms: on a machine this busy, each other rank's"
    elif top["p_value"] < verdict["level"] and top in verdict["named"]:
        last = each["last_by_rank"].get(top["rank"])
        why += f", but it was the last in {last} of {each['rounds']} rounds of collectives only: they waited for others"
    elif verdict["steps"] < verdict["needed"]:
        why += f"; {verdict['steps']} steps compared, {verdict['needed']} needed"
    evidence = {key: top[key] for key in ("rank", "longest_in", "steps", "p_value", "ratio")}
    return [], why, {**evidence, "level": verdict["level"], "steps_needed": verdict["needed"], "rule": rule}


def _counts(named: dict, each: dict) -> str:
    """ "12 of 12 rounds of collectives (1 in 4 by chance; p = 2.4e-07, level 0.001)"; "... of ranks 1, 3 (..."."""
    members = named.get("members") or []
    among = f" of {wording.who(members)}" if 1 < len(members) < each.get("ranks", 0) else ""
    chance = f"1 in {named['ranks_compared']} by chance; p = {named['p_value']:.2g}, level {each['level']:g}"
    if named.get("counted") == collectives.STEPS:
        return f"the collective{among} that waited longest in {named['last_in']} of {named['rounds']} steps ({chance})"
    return f"{named['last_in']} of {named['rounds']} rounds of collectives{among} ({chance})"


def _too_few(each: dict | None) -> dict:
    """A verdict of each collective apart that held too few rounds: how many, how many would do and
    the window that would hold them; nothing where it was not made."""
    if each is None or each["decided"] or not each.get("needed"):
        return {}
    return {"rounds": each["rounds"], "rounds_needed": each["needed"], "window_steps_needed": each["window_steps"]}


def _by_total_time(measured: list[dict]) -> tuple[list[tuple[dict, dict]], str | None]:
    """In lockstep: the rank that waits least in its collectives is the one the others wait for.

    Named only from windows of COLLECTIVE_MIN_STEPS recorded steps or more (tried: a healthy 4-rank
    job was told "rank 1 is the one the others wait for" from 2 steps of waits), and only with a
    margin that beats the spread between ranks: below COLLECTIVE_RATIO of the others' median (at a
    half, a busy machine's starving one of two alike ranks for a window was named; against three
    others or more, COLLECTIVE_RATIO_MANY), and further below the least of them than they are
    spread among themselves, so that one rank that happened to arrive last in a few collectives is
    no finding; and only with waits the job's steps can hold (_why_not_the_jobs).

    Also returns, when the ranks are in lockstep (the others spend COLLECTIVE_SHARE of their window
    in collectives or more) and none is named, why the rank that waited least is not: there the
    ranks' step times are alike by construction, and "no rank stands out" must say it is the
    collectives' evidence that fell short (tried: a DDP rank sleeping 30 % of a step more was told
    "less than 1.00 ms apart, within what the host's scheduling does to alike processes")."""
    found: list[tuple[dict, dict]] = []
    why: dict[int, str] = {}
    # a pipeline's windows: sends and receives only (tracecollectives.POINT_TO_POINT), none to number
    held_in = "sends and receives" if all(p.get(COLLECTIVES) == [] for p in measured) else "collectives"
    for process in measured:
        others, typical, low, high, share = _against(process, measured)
        recorded = stepwaits.recorded_steps(process)
        own = process["collective_s"]
        ratio = COLLECTIVE_RATIO_MANY if len(others) >= 3 else COLLECTIVE_RATIO
        if share < COLLECTIVE_SHARE:
            continue
        span = _span_ms(low, high)
        reason: str | None
        if recorded < COLLECTIVE_MIN_STEPS:
            held = f"{recorded} recorded step" + ("" if recorded == 1 else "s")
            reason = f"its window held {held}, fewer than {COLLECTIVE_MIN_STEPS}"
            if own < typical * ratio:  # it leans: say what would decide (a window is the user's choice)
                reason += f" (--active {COLLECTIVE_MIN_STEPS} or more)"
        elif own >= typical * ratio:
            reason = f"that is not below {ratio:g} of the others' median ({_wait_ms(typical * ratio)} ms)"
        elif own >= low - (high - low):
            reason = "the others are spread among themselves by more than it is below the least of them"
        else:
            step_s = _job_step([process, *others])
            every = stepwaits.every_step(process, others, step_s) if step_s else None
            reason = _why_not_its_work(process, others, typical - own) or _why_not_the_jobs(
                process, others, typical - own, recorded, every
            )
        if reason is not None:
            why[id(process)] = (
                f"in lockstep (the others spent {share:.0%} of their window in {held_in}), rank {process['rank']} "
                f"waited least, {_wait_ms(own)} ms against {span} {wording.on_others(others)}, and is no finding: "
                f"{reason}"
            )
            continue
        steps = process.get("window_label") or "its window"
        found.append(
            (
                process,
                {
                    "rank": process["rank"],
                    "method": "collectives",
                    "collective_s": own,
                    "others_collective_s": typical,
                    "others_min_collective_s": low,
                    "steps": recorded,
                    "ratio": round(own / low, 3) if low else 0.0,
                    "test": f"least time in collectives, below {ratio:g} of the others' median and beyond their spread",
                    "level": ratio,
                    "evidence": f"in {steps} it spent {_wait_ms(own)} ms in collectives against {span} on the other "
                    "ranks: the others wait for it",
                },
            )
        )
        if every and every["named"] and step_s and (typical - own) / recorded < COLLECTIVE_MIN_WAIT * step_s:
            lead = {f"lead_{key}": every[key] for key in ("least_s", "most_s", "needed_s")}
            found[-1][1].update(rule=stepwaits.EVERY_STEP, **lead)
            found[-1][1]["evidence"] += f"; {stepwaits.text(every, step_s)}"
    found.sort(key=lambda pair: pair[1]["collective_s"] / max(pair[1]["others_collective_s"], 1e-12))
    least = min(measured, key=lambda p: p["collective_s"])
    return found, None if found else why.get(id(least))


def waited_for(group: list[dict]) -> list[tuple[dict, dict]]:
    """In lockstep, in windows of fewer than COLLECTIVE_MIN_STEPS recorded steps: the rank the
    others waited for in those steps, with its evidence: ``(process, finding)``, at most one.

    The question of the run a spike's suggestion starts (one recorded step on the spike): which
    rank the step waited for. Its window cannot say a rank is slow in every step, so the answer is
    of those steps only, and only on a spike's evidence: the rank spent least in collectives (below
    COLLECTIVE_RATIO of the others' median and beyond their spread), the others waited
    ONE_OFF_WAIT_STEPS of the job's median step longer a recorded step, and its own work there was
    ONE_OFF_WORK_RATIO times theirs and longer than theirs by half their extra wait
    (_why_not_its_work): not their profilers' start or stop. Each rank's wait for a CPU there is
    taken off its own work (the others' too: a 4-rank DDP rank sleeping 45 ms more in one step of 5 ms
    beside two CPU hogs, its own work 50 ms against the others' 8-29 ms, up to 13 ms of which
    waited for a CPU, was refused), and its wait past the others' median off their wait: the machine's doing,
    not the job's."""
    measured = _measured(group)
    if len(measured) < 2:
        return []
    process = min(measured, key=lambda p: p["collective_s"])
    recorded = stepwaits.recorded_steps(process)
    step_s = _job_step(measured)
    if not 1 <= recorded < COLLECTIVE_MIN_STEPS or step_s is None:
        return []
    others, typical, low, high, share = _against(process, measured)
    own = process["collective_s"]
    if share < COLLECTIVE_SHARE or own >= typical * COLLECTIVE_RATIO or own >= low - (high - low):
        return []
    per_step = (typical - own) / recorded
    cpu_s, bound = stepwaits.cpu_wait_in(process)
    own_work = process["window_s"] - own - cpu_s
    works = sorted(p["window_s"] - p["collective_s"] - stepwaits.cpu_wait_in(p)[0] for p in others)
    work, machine = stepstats.quantile(works, 0.5), stepwaits.cpu_excess(process, others) / recorded
    if per_step - machine < ONE_OFF_WAIT_STEPS * step_s or own_work < ONE_OFF_WORK_RATIO * work:
        return []
    if _why_not_its_work(process, others, typical - own) is not None:
        return []
    cpu = f", {'at most ' if bound else ''}{_wait_ms(cpu_s)} ms more waiting for a CPU" if cpu_s else ""
    evidence = (
        f"it spent {_wait_ms(own)} ms in collectives against {_span_ms(low, high)} {wording.on_others(others)}, and "
        f"{_wait_ms(own_work)} ms in its own work against {_span_ms(works[0], works[-1])}{cpu}; their extra "
        f"wait, {per_step * 1e3:.1f} ms a recorded step, is {per_step / step_s:.0f}x the job's "
        f"{step_s * 1e3:.1f} ms median step"
    )
    return [
        (
            process,
            {
                "rank": process["rank"],
                "window": process.get("window_label") or f"its {recorded} recorded step" + "s"[: recorded - 1],
                "steps": recorded,
                "method": "collectives",
                "collective_s": own,
                "others_collective_s": typical,
                "own_work_s": own_work,
                "others_work_s": work,
                "cpu_wait_s": cpu_s,
                "wait_per_step_s": per_step,
                "vs_median": round(per_step / step_s, 1),
                "evidence": evidence,
            },
        )
    ]


def apart(one: dict, other: dict) -> bool:
    """Whether two ranks' windows show them out of lockstep: each spent less than COLLECTIVE_SHARE
    of its window in collectives (ranks that train alone, stages that rarely meet), so that neither
    waits for the other's step. Not known apart where a window's time was not read (no window, an
    old record): the caller then judges by the numbers alone."""
    shares = [
        p["collective_s"] / p["window_s"]
        for p in (one, other)
        if p.get("collective_s") is not None and p.get("window_s")
    ]
    return len(shares) == 2 and max(shares) < COLLECTIVE_SHARE


def together(one: dict, other: dict) -> bool:
    """Whether two ranks' windows show them in lockstep: both read, and not apart."""
    return len(_measured([one, other])) == 2 and not apart(one, other)


def _measured(group: list[dict]) -> list[dict]:
    """The processes whose window's time in collectives was read from their traces."""
    return [p for p in group if p.get("collective_s") is not None and p.get("window_s")]


def _against(process: dict, measured: list[dict]) -> tuple[list[dict], float, float, float, float]:
    """The others of ``process`` and their time in collectives: median, least, most, and the median
    share of their window it took."""
    others = [p for p in measured if p is not process]
    waits = sorted(p["collective_s"] for p in others)
    share = stepstats.quantile(sorted(p["collective_s"] / p["window_s"] for p in others), 0.5)
    return others, stepstats.quantile(waits, 0.5), waits[0], waits[-1], share


def _why_not_its_work(process: dict, others: list[dict], advantage_s: float) -> str | None:
    """Why the others' longer waits are not for this rank's work; None when they can be.

    In the window every moment of a rank is in a collective or its own (compute, data, a sleep):
    a rank the others wait for spends their extra wait in its own work, so its own time is longer
    than theirs by about as much. When it is not longer by COLLECTIVE_WORK_SHARE of their extra
    wait, their windows were longer than its own by that much instead: each rank's profiler starts
    and stops at its own moment, and the others waited for this one's start or stop, outside its
    window (tried: a healthy 4-rank DDP job beside a loaded suite, rank 0 in collectives 21 ms
    against 45-57 ms, own time 8.2 ms against 8.0-10.4 ms, window 29 ms against 55-65 ms; rank 3
    of the same job reading slow data: own time 218 ms against 14-21 ms, windows 245-259 ms).

    A rank's wait for a CPU past the others' is the machine's, not its work: it is taken off its own
    time (tried: a healthy 2-rank DDP job of 5 ms steps beside two CPU hogs, rank 0 in collectives
    2.5 ms against 17 ms, its own time 19.0 ms against 9.1 ms, of which 9.0 ms waiting for a CPU
    against 0.6 ms: named). Past the others', not all of it: where DDP's buckets are reduced while
    backward computes, the time in collectives holds the waits for a CPU of that computing."""
    cpu_s = stepwaits.cpu_excess(process, others)
    own_work = process["window_s"] - process["collective_s"] - cpu_s
    work = stepstats.quantile(sorted(p["window_s"] - p["collective_s"] for p in others), 0.5)
    if own_work - work >= COLLECTIVE_WORK_SHARE * advantage_s:
        return None
    if cpu_s and own_work + cpu_s - work >= COLLECTIVE_WORK_SHARE * advantage_s:
        return (
            f"its own time in the window outside collectives, less the {_wait_ms(cpu_s)} ms it waited for a CPU "
            f"past the others, {_wait_ms(own_work)} ms, is not longer than the others' ({_wait_ms(work)} ms) by "
            "half their extra wait: the machine held it, not its work"
        )
    windows = sorted(p["window_s"] for p in others)
    return (
        f"its own time in the window outside collectives, {_wait_ms(own_work)} ms, is not longer than the "
        f"others' ({_wait_ms(work)} ms) by half their extra wait: their windows were longer "
        f"({_wait_ms(windows[0])}-{_wait_ms(windows[-1])} ms against its {_wait_ms(process['window_s'])} ms), "
        "each rank's profiler starting and stopping at its own moment"
    )


def _why_not_the_jobs(
    process: dict, others: list[dict], advantage_s: float, recorded: int, every: dict | None
) -> str | None:
    """Why the others' longer waits, per recorded step, cannot be the job's or are not worth a run;
    None when they can and are.

    At least NOISE_S and COLLECTIVE_MIN_WAIT of the job's median step: in a few recorded steps the
    order in which alike ranks reach a collective moves their waits by up to a fifth of a step
    (tried: 2.5 ms a step of 12 ms, two alike gloo ranks). At most COLLECTIVE_WAIT_STEPS of the
    job's median step outside the tool's steps: in lockstep a wait is part of every rank's step,
    so a slow rank that makes the others wait X makes the job's steps longer than X (tried: alike
    ranks of 7 ms steps waited 7.6 ms a recorded step apart, the window's own doing: the waited-for
    rank's own time was 11.7 ms a recorded step, 4.7 ms of it past a step); or of the slow rank's
    whole recorded step (its own time and its time in collectives), when the window left its own
    time a recorded step as the job has it: within COLLECTIVE_UNINFLATED of the job's median step,
    or past it by COLLECTIVE_INFLATION_SHARE of the wait at most. A rank whose step is nearly all
    the job's slow part (a sleep, a wait for data) makes the others wait a whole step, and the
    profiler's and a loaded machine's cost on it more (tried: 202.8 ms a recorded step against a
    202.3 ms median, examples/stragglers.py's rank 1 sleeping 200 ms a step); the others' windows
    also run longer than its own, each profiler starting and stopping when the CPU lets it (tried:
    rank 2 of 4 sleeping 100 ms a step, own time 109.4 ms a recorded step, 15 ms in collectives;
    the others waited 114.9 ms a recorded step longer, in windows 8-21 ms a step longer). Alike
    ranks cannot pass that way: their extra wait is the waited-for rank's inflation, and an
    uninflated rank's time in collectives is the least of them. And only in a window whose
    recorded steps took at most COLLECTIVE_WINDOW_STEPS of the job's median step: past that the
    profiler's own cost, unevenly spread, swamps the waits (tried: a 0.5 ms job's recorded steps
    took 40 ms)."""
    per_step = advantage_s / max(recorded, 1)
    step_s = _job_step([process, *others])
    if per_step < findings.NOISE_S:
        return f"the others waited {per_step * 1e3:.2f} ms a recorded step longer, under {findings.NOISE_S * 1e3:g} ms"
    if step_s is None:
        return None
    recorded_s = stepstats.quantile(sorted(p["window_s"] / max(recorded, 1) for p in (process, *others)), 0.5)
    most = COLLECTIVE_WAIT_STEPS * step_s
    own_s = (process["window_s"] - process["collective_s"]) / max(recorded, 1)
    if own_s <= COLLECTIVE_UNINFLATED * step_s or own_s - step_s <= COLLECTIVE_INFLATION_SHARE * per_step:
        # Its whole recorded step, and by as much as the others' windows ran longer than its own: they
        # waited for it there too (tried: rank 1 of 2 sleeping 200 ms a step beside a loaded suite, the
        # other waited 204.5 ms a recorded step, its own step 203.5 ms, their windows 628 and 610 ms).
        skew = max(0.0, stepstats.quantile(sorted(p["window_s"] for p in others), 0.5) - process["window_s"])
        most = max(most, (process["window_s"] + skew) / max(recorded, 1))
    longer = f"the others waited {per_step * 1e3:.1f} ms a recorded step longer"
    if per_step < COLLECTIVE_MIN_WAIT * step_s and not (every and every["named"]):
        steps = f"; {stepwaits.text(every, step_s)}" if every else ""
        return (
            f"{longer}, under {COLLECTIVE_MIN_WAIT:g} of the job's {step_s * 1e3:.1f} ms median step "
            f"(the order in which alike ranks reach a collective moves their waits that much){steps}"
        )
    if per_step > most:
        return f"{longer}, more than its steps can hold ({most * 1e3:.1f} ms): the window's own doing"
    if recorded_s > COLLECTIVE_WINDOW_STEPS * step_s:
        return (
            f"its recorded steps took {recorded_s * 1e3:.1f} ms against a {step_s * 1e3:.1f} ms median step: "
            "the profiler's own cost swamps the waits"
        )
    return None


def _job_step(processes: list[dict]) -> float | None:
    """The job's median step: the median of the processes' own; None where none holds step statistics."""
    medians = sorted(p["step_stats"]["median_s"] for p in processes if p.get("step_stats"))
    return stepstats.quantile(medians, 0.5) if medians else None


def _early_text(named: dict) -> str:
    """What the chance was taken against, where a rank always early was left out of it (collectives._early)."""
    early = named.get("early_ranks") or []
    if not early:
        return ""
    return f"; chance among the ranks but {', '.join(map(str, early))}, which reached the rounds first beyond chance"
