"""The launcher wing: what runs once, in ``npuprof-run`` itself, never inside the job.

The command line, the job's environment and its launch, signals, ``--print-env``, ``--trigger``,
``--check``, and the views of the job's answer (summary, JSON, the HTML page). It may import what
it likes, the in-process wing included (to read its constants), but nothing in the job imports it.
"""
