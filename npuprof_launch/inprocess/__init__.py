"""The in-process wing: everything that runs inside the user's job, in every one of its Python processes.

The rule that holds here and nowhere else: until the process has imported torch, a module of
this wing imports only the standard library and the floor (``npuprof_launch.common``); when
``NPU_PROF_ENABLE`` is unset, nothing of it is imported at all (``sitecustomize_pkg`` checks the
switch first). Anything heavy (wrapt, torch_npu, the backends) is imported at the moment it is
needed, never at start-up. No exception of ours may reach the user's program, and the profiler is
started, stepped and stopped only where torch takes it (``safepoints``). The launcher's wing is
never imported from here.
"""
