# npuprof-launch: loaded by every Python process of a job started under npuprof-run (or with
# its variables exported). Nothing happens unless NPU_PROF_ENABLE=1. Then the user's own
# sitecustomize, if one exists further on the path, is loaded as if this file were not here.
# Kept to old syntax on purpose: every interpreter of the job reads this file.
import os
import sys

if os.environ.get("NPU_PROF_ENABLE") == "1":
    try:
        from npuprof_launch.inprocess import hook as _npuprof_hook
    except ImportError:
        _npuprof_hook = None  # type: ignore[assignment]  # the optional-import idiom: None stands for absent
        # This interpreter has no npuprof_launch (another venv, another Python): say so where the
        # launcher's report looks (processlog.NO_PACKAGE), so that it does not blame the job.
        try:
            _npuprof_fd = os.open(
                os.path.join(os.environ.get("NPU_PROF_OUTPUT_DIR", ""), "npuprof_status", "processes.jsonl"),
                os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                0o664,
            )
            os.write(_npuprof_fd, ('{"event": "no_package", "pid": %d, "executable": "%s"}\n' % (
                os.getpid(), sys.executable.replace("\\", "/").replace('"', "'"))).encode())
            os.close(_npuprof_fd)
        except Exception:
            pass
    if _npuprof_hook is not None:
        try:
            _npuprof_hook.install()
        except Exception as _npuprof_exc:  # never raise into the user's program
            try:
                sys.stderr.write("npuprof: hook not installed, job goes on unprofiled: %r\n" % (_npuprof_exc,))
            except Exception:  # no stderr (2>&-, a daemon): an error here would stop the interpreter's start
                pass


def _npuprof_chain_load():
    """Import the next sitecustomize on sys.path: the one this directory shadows."""
    here = os.path.dirname(os.path.abspath(__file__))
    positions = [i for i, entry in enumerate(sys.path) if os.path.abspath(entry or ".") == here]
    if not positions:
        return
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    for index in reversed(positions):
        del sys.path[index]
    try:
        import sitecustomize  # noqa: F401  (the user's own, if any)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


_npuprof_chain_load()
