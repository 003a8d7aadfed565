"""The README and docs/ as a newcomer meets them: their generated blocks are current, CI runs the
README's test command, every example of them that runs on one machine runs as written and
profiles, and the Holistic Trace Analysis script of docs/output.md works on a single process's
output and on a multi-rank job's."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
from jobs import ROOT, clean_env

from npuprof_launch.launcher import readme

#: The pages whose examples run: the README first, then docs/ in name order.
PAGES = ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]
HTA_BEGIN, HTA_END = "<!-- hta-snippet:begin", "<!-- hta-snippet:end -->"


def page_text(page: str) -> str:
    with open(os.path.join(ROOT, page)) as handle:
        return handle.read()


def readme_text() -> str:
    return page_text("README.md")


@pytest.mark.parametrize("page", sorted({block[0] for block in readme.BLOCKS}))
def test_generated_blocks_are_current(page):
    """The options table, the usage lines and the scenarios table, as the code makes them."""
    text = page_text(page)
    assert readme.render(text, page) == text, f"{page} is stale: run python -m npuprof_launch.launcher.readme"


def test_the_options_page_has_every_option_and_the_usage_lines():
    text = page_text(readme.OPTIONS_PAGE)
    assert readme.options_table() in text and readme.usage_lines() in text
    assert "[--align N]" in readme.usage_lines(), "--help's usage line for --trigger names every option it takes"


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        ci = handle.read()
    command = ".venv/bin/python -m pytest -q"
    assert f"    {command}\n" in readme_text() and command in ci


def page_examples(text: str) -> list[str]:
    """Every command of a page's code blocks that runs one of examples/ (continuation lines
    joined); of the set-up line, the part after the installs. The others need a cluster, a job of
    the reader's or a running job to talk to, and have tests of their own."""
    found, pending = [], ""
    for line in text.splitlines():
        if not line.startswith("    "):
            pending = ""
            continue
        pending += line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        command, pending = pending.split(" && ")[-1], ""
        if "examples/" in command and command.startswith(("npuprof-run ", "bash ", ".venv/bin/npuprof-run ")):
            found.append(command)
    return found


def examples() -> list[str]:
    """The examples of the README and of docs/, each once (a command on several pages runs once)."""
    found: list[str] = []
    for page in PAGES:
        found.extend(c for c in page_examples(page_text(page)) if c not in found)
    return found


#: The runs the HTA script is tried on: the README's first run (one process, no _rank in its file
#: names) and the 4-rank example.
SINGLE = next((c for c in examples() if c.startswith(".venv/bin/")), "")
MULTI = next((c for c in examples() if "stragglers.py" in c), "")


def test_the_readme_has_runnable_examples():
    commands = page_examples(readme_text())
    assert len(commands) >= 5, commands
    assert SINGLE in commands and MULTI in commands
    everywhere = examples()
    assert len(everywhere) > len(commands), "the docs' examples are collected too"
    assert any("--scenario rl" in c for c in everywhere) and any("stuck.py" in c for c in everywhere)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Each example run once, in a fresh directory holding the examples, with the environment
    activated as the README says (`. .venv/bin/activate`): its result and output directory, for
    the tests of this module that read the same run."""
    done: dict[str, tuple] = {}

    def run(command: str) -> tuple[subprocess.CompletedProcess, str, dict]:
        if command not in done:
            where = tmp_path_factory.mktemp("example")
            shutil.copytree(os.path.join(ROOT, "examples"), where / "examples")
            venv = sys.prefix
            os.symlink(venv, where / ".venv")
            env = clean_env(VIRTUAL_ENV=venv, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
            result = subprocess.run(
                ["bash", "-c", command], cwd=str(where), env=env, capture_output=True, text=True, timeout=600
            )
            found = re.search(r"windows complete; output in (\S+)", result.stderr)
            out = found.group(1) if found else str(where / "examples" / "npuprof_output")  # env_export.sh
            done[command] = (result, out, env)
        return done[command]

    return run


def _grouped(commands: list[str]) -> list:
    """Each command on a worker of its own (xdist_group), where its HTA test reads the same run."""
    return [pytest.param(c, marks=pytest.mark.xdist_group(f"doc-example-{i}")) for i, c in enumerate(commands)]


@pytest.mark.parametrize("command", _grouped(examples()))
def test_each_doc_example_runs_as_written(command, ran):
    """The example exits 0, its summary (or its --check) passes."""
    result, out, env = ran(command)
    assert result.returncode == 0, f"{command}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "command not found" not in result.stderr and "No module named" not in result.stderr
    assert "open a trace" in result.stderr or "windows complete" not in result.stderr, result.stderr
    check = subprocess.run(
        [os.path.join(sys.prefix, "bin", "npuprof-run"), "--check", out], env=env, capture_output=True, text=True
    )
    assert check.returncode == 0, f"{command}: --check {out}\n{check.stdout}\n{check.stderr}"


def hta_script() -> str:
    """The HTA script of docs/output.md, as a reader copies it (the code block, unindented)."""
    text = page_text(os.path.join("docs", "output.md"))
    block = text.split(HTA_BEGIN, 1)[1].split("\n", 1)[1].split(HTA_END, 1)[0]
    return "\n".join(line[4:] for line in block.splitlines()) + "\n"


def test_the_hta_script_is_where_the_docs_say():
    script = hta_script()
    assert "TraceAnalysis(" in script and "_rank" in script and compile(script, "hta_ranks.py", "exec")


@pytest.mark.parametrize(
    "command, ranks",
    [
        pytest.param(SINGLE, [0], marks=pytest.mark.xdist_group(f"doc-example-{examples().index(SINGLE)}")),
        pytest.param(MULTI, [0, 1, 2, 3], marks=pytest.mark.xdist_group(f"doc-example-{examples().index(MULTI)}")),
    ],
    ids=["single-process", "4-ranks"],
)
def test_the_hta_script_reads_the_output(command, ranks, ran, tmp_path):
    """Saved as hta_ranks.py and given the output directory, it prints one row per rank with the
    steps of its window; on the 4-rank example, rank 2 (the one the others wait for) spent the
    least time in collectives."""
    pytest.importorskip("hta", reason="Holistic Trace Analysis is not installed (pip install -e '.[hta]')")
    result, out, env = ran(command)
    assert result.returncode == 0, result.stderr
    (tmp_path / "hta_ranks.py").write_text(hta_script())
    shown = subprocess.run(
        [sys.executable, "hta_ranks.py", out], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300
    )
    assert shown.returncode == 0, f"{shown.stdout}\n{shown.stderr}"
    table = shown.stdout.splitlines()
    rows = {int(line.split()[0]): line.split()[1:] for line in table if re.match(r"^\d+\s", line)}
    assert sorted(rows) == ranks, shown.stdout
    window = re.search(r"--active (\d+)", command)
    assert all(int(row[0]) == int(window.group(1)) for row in rows.values()), shown.stdout
    if len(ranks) > 1:
        collectives = {rank: float(row[2]) for rank, row in rows.items()}
        assert min(collectives, key=collectives.get) == 2, shown.stdout


def answer_lines(stderr: str) -> list[str]:
    """The job's answer in a run's stderr: from the first ``npuprof:`` line on, the job's own lines
    and the tool's lines while it ran (a window's cut, a warning) left out."""
    lines = stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if re.match(r"npuprof: \d[\d,]* process(es)? profiled", line))
    return lines[first:]


def width_but_paths(line: str) -> int:
    """A line's length, its paths (words with a slash) counted as nothing: they are never wrapped."""
    return len(" ".join(word for word in line.split(" ") if "/" not in word))


@pytest.mark.xdist_group(f"doc-example-{examples().index(SINGLE)}")
def test_the_readme_first_run_answers_in_one_screen(ran):
    """At most 8 lines of answer besides what it found (a loaded machine may stall one of its 1 ms steps
    for real, told with the command that profiles it), none over 100 characters but for its paths in
    a terminal, as the README shows it."""
    result, _, _ = ran(SINGLE)
    told = answer_lines(result.stderr)
    found = [line for line in told if line.startswith(("npuprof: findings:", "  - ", "npuprof: next: "))]
    assert len(told) - len(found) <= 8, "\n".join(told)
    assert all(width_but_paths(line) <= 100 for line in told if line not in found), "\n".join(told)
    shown = readme_text().split("weights sha256", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert 0 < len(shown) <= 8 and all(width_but_paths(line.strip()) <= 100 for line in shown), shown


def page_checks(out: str) -> list[str]:
    """What a page must not do (each a way a page contradicted itself): a ranks tile of a job without
    ranks, a paragraph said twice, a code identifier in its text, "no spike" beside a spike found,
    the tool's steps unmarked on a chart of lines. Returns what it found wrong."""
    import html as htmlmod
    import json as jsonmod

    with open(os.path.join(out, "npuprof_report.html")) as handle:
        page = handle.read()
    report = jsonmod.loads(
        subprocess.run(
            [sys.executable, "-m", "npuprof_launch", "--check", out, "--json"], capture_output=True, text=True
        ).stdout
    )
    wrong = []
    tiles = dict((k, v) for v, k in re.findall(r'<div class="v">(.*?)</div><div class="k">(.*?)</div>', page))
    if not report["job"]["ranks"] and "ranks" in tiles:
        wrong.append(f"a ranks tile without ranks: {tiles}")
    visible = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S)
    paragraphs = [htmlmod.unescape(re.sub(r"<[^>]+>", "", p)) for p in re.findall(r"<p[^>]*>(.*?)</p>", visible, re.S)]
    twice = {p for p in paragraphs if paragraphs.count(p) > 1}
    if twice:
        wrong.append(f"said twice: {twice}")
    text = htmlmod.unescape(re.sub(r"<[^>]+>", " ", visible))
    identifiers = re.findall(r"\b[a-z_]+\.[A-Z][a-z]+[A-Z]\w*|\b[a-z_]+\._[a-z_]+", text)
    if identifiers:
        wrong.append(f"code identifiers: {identifiers}")
    spikes = [f for f in report["findings"] if f["kind"] == "spike"]
    if spikes and re.search(r'id="spikes"><h2>Spikes</h2><p>No spike', page):
        wrong.append("'no spike' beside a spike found")
    tool_steps = [n for n in report["notes"] if n["kind"] == "tool_steps"]
    if tool_steps and "<svg" in page and 'class="toolsteps"' not in page:
        wrong.append("the tool's steps are not marked on the chart")
    return wrong


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(SINGLE, marks=pytest.mark.xdist_group(f"doc-example-{examples().index(SINGLE)}")),
        pytest.param(MULTI, marks=pytest.mark.xdist_group(f"doc-example-{examples().index(MULTI)}")),
    ],
    ids=["single-process", "4-ranks"],
)
def test_the_page_of_the_readme_runs_agrees_with_itself(command, ran):
    result, out, _ = ran(command)
    assert result.returncode == 0, result.stderr
    assert page_checks(out) == []
