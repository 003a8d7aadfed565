"""A rank the machine holds back in every step: its stepping thread waits for a CPU, the others' do not.

A busy machine spreads its waits over alike ranks: beside two CPU hogs each rank waits for a CPU in
some steps, a different one each time, and the answer tells those steps apart (cpu_wait notes; in
lockstep, "the machine held it, not its work"). A rank whose cores are shared with another process
for the whole job (a pinned data worker, a leftover process, two ranks bound to one core) waits in
every step, and in lockstep the others wait for it: that is the job's answer, not noise. Tried: two
gloo DDP ranks each bound to a core, a CPU hog bound to rank 1's: rank 1 waited for a CPU 7.9 ms a
step against 0.4 ms on rank 0 in 27 of 27 steps read, spent 9.3 ms of its window in collectives
against 37 ms, ran 0.86x rank 0's time on a CPU, and was told "no rank stands out".

So a rank is named when its thread waited for a CPU longest in more of the steps read one by one
(inprocess/cpuwait.py: a window's steps and those beside it) than chance allows among alike ranks
(cputime.judge's test, on the waits), by WAIT_RATIO times the others' median wait and WAIT_SHARE of
the job's step at least (a busy machine's waits do not stay on one rank so long); where its waits
are out of proportion to its time on a CPU: WAIT_RATIO times what its thread ran over the others'
(a rank with more work is runnable longer and waits longer too, in proportion: cputime names that
one by its work). Sharing a core costs a thread CPU time too: beside two spinning processes on its
core and four unpinned hogs on 2 cores, rank 1 ran 1.17x and 1.39x its alike peer's time on a CPU
and waited 106x and 153x as long (a margin on the time ran alone, 1.15x, missed both); and where
the job pays for it: in lockstep the others waited longer in collectives than it, out of lockstep
its median step is longer than theirs. Standard library only, linear in ranks times steps.
"""

from __future__ import annotations

from npuprof_launch.common import findings, stepstats
from npuprof_launch.launcher import cputime, wording

RULE = "cpu_wait"
TEST = "the longest wait for a CPU in more steps than chance: binomial against 1 in n, times the ranks tested"
#: Its median wait a step over the others' median (findings.WAIT_RATIO), and over the job's
#: median step, at least.
WAIT_RATIO = findings.WAIT_RATIO
WAIT_SHARE = 0.1


def judge(group: list[dict], step_s: float | None, lockstep: bool) -> dict | None:
    """The rank of ``group`` (process rows of one run and stage) held back by the machine, as a
    finding's fields with its ``evidence`` text; None where none is, or the record cannot say."""
    if len(group) < 2 or not step_s:
        return None
    waits = cputime.ran_of(group, "waited")
    if waits is None:
        return None
    verdict = cputime.judge(waits)
    if not verdict["named"]:
        return None
    top = verdict["named"][0]
    extra = top["extra_per_step_s"]
    if top["ratio"] < WAIT_RATIO or extra < WAIT_SHARE * step_s:
        return None
    ran_ratio = cputime.ratio_of(group, top["rank"])
    if ran_ratio is None or not findings.out_of_proportion(top["ratio"], ran_ratio):
        return None
    process = next(p for p in group if p["rank"] == top["rank"])
    others = [p for p in group if p is not process]
    cost = _cost(process, others, lockstep)
    if cost is None:
        return None
    others_text = f"{_ms(top['others_ran_per_step_s'])} ms {wording.on_others(others)}"
    chance = f"1 in {top['ranks_compared']} by chance; p = {top['p_value']:.2g}, level {verdict['level']:g}"
    waited = (
        f"its stepping thread waited for a CPU {_ms(top['ran_per_step_s'])} ms a step against {others_text}, the "
        f"longest in {top['longest_in']} of {top['steps']} steps ({chance}), and ran {ran_ratio:.2f}x their time on "
        f"a CPU{_proportion(top['ratio'], ran_ratio)}; {cost}: another process shares its cores (a data worker, a "
        "process left over, the ranks' CPU binding)"
    )
    return {
        "rank": top["rank"],
        "rule": RULE,
        "wait_per_step_s": top["ran_per_step_s"],
        "others_wait_per_step_s": top["others_ran_per_step_s"],
        "longest_in": top["longest_in"],
        "steps": top["steps"],
        "ranks_compared": top["ranks_compared"],
        "p_value": top["p_value"],
        "level": verdict["level"],
        "test": TEST,
        "ran_ratio": round(ran_ratio, 3),
        "lockstep": lockstep,
        "evidence": waited,
    }


def weigh(found: list[dict], group: list[dict], step_s: float | None, lockstep: bool) -> tuple[list, dict | None]:
    """The ranks of ``group`` named slow (``found``) and the rank held back (judge's), weighed
    together: where none is named slow, judge's verdict; where the ranks were named by their time on
    a CPU alone (``rule`` cpu_time) and judge names one of them, that one is told held back, not
    slow. Sharing a core costs a thread CPU time too (cache, the scheduler's switches): under a test
    suite's load, a DDP rank bound to a core with three spinning processes ran 1.21x its peer's time
    and waited 6.6x as long, and was "the one the others wait for"; a tensor-parallel rank so bound,
    1.20x, "the slowest". ``lockstep``: the group's ranks were found in lockstep without a rank named
    (a rank named by the collectives' rules is in lockstep too). Returns ``(found, held back)``."""
    if not found:
        return found, judge(group, step_s, lockstep)
    if any(one.get("rule") != cputime.CPU_TIME for one in found):
        return found, None
    held = judge(group, step_s, lockstep or any(one.get("method") == "collectives" for one in found))
    if held is None or all(one["rank"] != held["rank"] for one in found):
        return found, None
    return [one for one in found if one["rank"] != held["rank"]], held


def _cost(process: dict, others: list[dict], lockstep: bool) -> str | None:
    """What the job paid for the rank's waits, said; None where it paid nothing to see."""
    if lockstep:
        own = process.get("collective_s")
        theirs = [float(p["collective_s"]) for p in others if p.get("collective_s") is not None]
        if own is None or len(theirs) < len(others) or own >= min(theirs):
            return None
        window = process.get("window_label") or "its window"
        spent = f"it spent {wording.wait_ms(own)} ms in collectives against {wording.span_ms(min(theirs), max(theirs))}"
        return f"in lockstep the others wait for it: in {window} {spent}"
    medians = {p["rank"]: (p.get("step_stats") or {}).get("median_s") for p in [process, *others]}
    own_step = medians[process["rank"]]
    theirs_steps = sorted(v for r, v in medians.items() if r != process["rank"] and v)
    if not own_step or not theirs_steps:
        return None
    typical = stepstats.quantile(theirs_steps, 0.5)
    if own_step - typical < findings.NOISE_S:
        return None
    return f"its median step took {_ms(own_step)} ms against {_ms(typical)} ms on the others"


def _proportion(wait_ratio: float, ran_ratio: float) -> str:
    """Why its waits are not its work's, said after its time on a CPU."""
    if ran_ratio <= 1.0:
        return " (not more work)"
    waits = f"{wait_ratio:.1f}" if wait_ratio < 10 else f"{wait_ratio:.0f}"
    return f": more work would wait about {ran_ratio:.2f}x as long, not {waits}x"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"
