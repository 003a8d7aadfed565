"""``npuprof-run --check DIR | head``: a reader that stops early is no error of the job's answer.

The launcher's output modes print a report that may be long; when the reader closes the pipe,
what is left goes nowhere, without Python's BrokenPipeError traceback (it used to print one)."""

from __future__ import annotations

import subprocess
import sys

CODE = (
    "import sys\n"
    "from npuprof_launch.launcher import cli\n"
    "cli.check = lambda *args, **kwargs: print('x' * 1000000) or 0  # a report longer than a pipe holds\n"
    "sys.exit(cli.main(['--check', '.']))\n"
)


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    child = subprocess.Popen([sys.executable, "-c", CODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the reader is gone before the report is printed
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
