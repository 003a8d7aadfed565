"""The floor both wings stand on: facts the launcher and the job's processes must agree on.

Variable names and path rules (``names``, ``files``), the options table, the schedule's
arithmetic, the status record's schema, the step-times file and its statistics, the process log,
the on-demand request format, the deliverable rules. These modules run inside the job too, so
they import only the standard library and each other, never a module of either wing.
"""
