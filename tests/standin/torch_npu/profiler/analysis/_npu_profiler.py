"""STAND-IN for torch_npu/profiler/analysis/_npu_profiler.py: who parses which session, and in which process.

As the real one: every session directory at the path (the path itself, or its direct
subdirectories, that hold FRAMEWORK/ or a PROF_* directory: ProfilerPathManager.
get_profiler_path_list) is parsed by a pool of forked processes, never by the caller (a daemon
caller only gets an error message). 2.6 and later keep one process pool for the process
(MultiProcessPool): a sync parse closes it and waits, an async one (``async_mode``) returns at once
and its worker, kept for the next window, ends with the interpreter (atexit). 2.4.0 makes a
multiprocessing pool of non-daemon processes for each parse and waits for it.
"""

import atexit
import gc
import multiprocessing
import os
import re
from concurrent import futures
from multiprocessing.pool import Pool

from torch_npu.profiler.analysis._profiling_parser import ProfilingParser
from torch_npu.profiler.analysis.prof_common_func._constant import Constant, print_error_msg
from torch_npu.version import __version__

DAEMON_MESSAGE = (
    "The profiling data cannot be parsed during the daemon process, it is recommended that "
    "you use an offline parsing interface to parse the collected data. \n"
    "For example: \nfrom torch_npu.profiler.profiler import analyse\n"
    'analyse("profiling_data_path")'
)


def get_profiler_path_list(input_path: str) -> list:
    """ProfilerPathManager.get_profiler_path_list: the session directories at a path."""
    if not os.path.isdir(input_path):
        return []
    if _is_session(input_path):
        return [input_path]
    found = []
    for name in os.listdir(os.path.realpath(input_path)):
        path = os.path.join(input_path, name)
        if os.path.isdir(path) and _is_session(path):
            found.append(path)
    return found


def _is_session(path: str) -> bool:
    if os.path.isdir(os.path.join(path, Constant.FRAMEWORK_DIR)):
        return True
    return any(
        re.match(r"^PROF_\d+_\d+_[0-9a-zA-Z]+", name) and os.path.isdir(os.path.join(path, name))
        for name in os.listdir(os.path.realpath(path))
    )


class NpuProfiler:
    @classmethod
    def analyse(
        cls,
        input_path: str,
        analysis_type: str = Constant.TENSORBOARD_TRACE_HANDLER,
        output_path: str = None,
        **kwargs,
    ):
        input_path = os.path.realpath(os.path.expanduser(input_path))
        if __version__ != "2.4.0" and not os.path.exists(input_path):
            raise RuntimeError(f"The path does not exist: {input_path}")
        profiler_path_list = get_profiler_path_list(input_path)
        if not profiler_path_list:
            return
        if multiprocessing.current_process().daemon:
            print_error_msg(DAEMON_MESSAGE)
            return
        multiprocessing.set_start_method("fork", force=True)
        process_number = min(kwargs.get("max_process_number", Constant.DEFAULT_PROCESS_NUMBER), len(profiler_path_list))
        if __version__ == "2.4.0":
            pool = Pool(processes=process_number, context=_ProfContext())
            for profiler_path in profiler_path_list:
                parser = ProfilingParser(profiler_path, analysis_type, output_path, kwargs)
                pool.apply_async(parser.analyse_profiling_data)
            pool.close()
            pool.join()
            return
        MultiProcessPool().init_pool(process_number)
        for profiler_path in profiler_path_list:
            parser = ProfilingParser(profiler_path, analysis_type, output_path, kwargs)
            MultiProcessPool().submit_task(parser.analyse_profiling_data)
        if not kwargs.get("async_mode", False):
            MultiProcessPool().close_pool()


def _init_worker() -> None:
    """As the real pool's initializer: no garbage collection in the worker (fork and GC conflict)."""
    gc.disable()


class MultiProcessPool:
    """The real one's Singleton: one pool per process, closed (and waited for) at exit."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._pool = None
            atexit.register(cls._instance.close_pool)
        return cls._instance

    def init_pool(self, max_workers: int = 4):
        if not self._pool:
            self._pool = futures.ProcessPoolExecutor(max_workers=max_workers, initializer=_init_worker)
        return self._pool

    def close_pool(self, wait: bool = True) -> None:
        if self._pool:
            self._pool.shutdown(wait=wait)
            self._pool = None

    def submit_task(self, func, *args, **kwargs) -> None:
        if self._pool:
            self._pool.submit(func, *args, **kwargs)


class _ProfProcess(multiprocessing.get_context("fork").Process):
    """2.4.0's ProfProcess: a pool process that is never a daemon, so its parse can fork its steps."""

    @property
    def daemon(self):
        return False

    @daemon.setter
    def daemon(self, value):
        return


class _ProfContext(type(multiprocessing.get_context("fork"))):
    Process = _ProfProcess
