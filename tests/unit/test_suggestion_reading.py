"""The suite reads every command a summary suggests with the tool's own parser (suggestions.accepted).

Under load a spike in a ``python -c 'CODE'`` job got a suggested run whose CODE, quoted as a shell
reads it, spans several lines; the suite read its first line alone and failed on the open quote."""

from __future__ import annotations

import shlex

from suggestions import accepted, suggestions


def test_a_suggestion_whose_job_argument_spans_lines_is_read_whole():
    code = "import torch\nimport target_lib\nprint('done')"
    command = shlex.join(["python", "-c", code])
    text = (
        "npuprof: findings:\n  - step 3: 1 process, 4.1x\n"
        f"npuprof: next: npuprof-run --skip-first 2 --active 1 --output-dir /o -- {command}\n"
        "npuprof: the whole run on one page: /o/npuprof_report.html\n"
    )
    (found,) = suggestions(text)
    assert shlex.split(found)[-3:] == ["python", "-c", code]
    _, job, _, _ = accepted(found)
    assert job == ["python", "-c", code]


def test_one_line_suggestions_are_read_as_they_are():
    text = "npuprof: next: npuprof-run --skip-first 6 --active 1 --output-dir /o -- python train.py\nnpuprof: x\n"
    assert suggestions(text) == ["npuprof-run --skip-first 6 --active 1 --output-dir /o -- python train.py"]
