"""STAND-IN for torch_npu/profiler/_profiler_path_creator.py: where each window's session directory goes.

One per process (the real one is a Singleton): tensorboard_trace_handler sets the output directory
and worker name, and each window's init_trace creates a directory named as the imitated release
names it: ``{worker_name or hostname}_{pid}_{local time %Y%m%d%H%M%S%f[:-3]}_ascend_pt`` (2.6 and
later), ``{worker_name, or hostname_pid}_{UTC time %Y%m%d%H%M%S%f[:-3]}_ascend_pt`` (2.4.0), in
the output directory, else in $ASCEND_WORK_PATH/profiling_data, else in the current directory.
The real one's path checks are not imitated.
"""

import os
import shutil
import socket
from datetime import datetime, timezone
from typing import Optional

from torch_npu.profiler.analysis.prof_common_func._constant import Constant, print_warn_msg
from torch_npu.version import __version__


def session_name(worker_name: Optional[str], pid: int, now: datetime) -> str:
    """The directory name of a session started at ``now`` (an aware datetime) by process ``pid``."""
    if __version__ == "2.4.0":
        worker = worker_name or f"{socket.gethostname()}_{pid}"
        stamp = now.astimezone(timezone.utc)
    else:
        worker = f"{worker_name or socket.gethostname()}_{pid}"
        stamp = now.astimezone()
    return "{}_{}_ascend_pt".format(worker, stamp.strftime("%Y%m%d%H%M%S%f")[:-3])


class ProfPathCreator:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._reset()
        return cls._instance

    def _reset(self) -> None:
        self._prof_path = None
        self._worker_name = None
        self._dir_path = None
        self._export_only_mode = False
        self._export_only_prof_dir = "export_only_prof_dir"
        self.is_prof_inited = False

    def init(self, worker_name: str = None, dir_name: str = None, export_only_mode: bool = False) -> None:
        self._export_only_mode = export_only_mode
        valid_name = isinstance(worker_name, str) and 0 < len(worker_name) < Constant.MAX_WORKER_NAME_LENGTH
        if valid_name or worker_name is None:
            self._worker_name = worker_name
        else:
            print_warn_msg("Invalid parameter worker_name, reset it to default.")
            self._worker_name = None
        if dir_name and isinstance(dir_name, str):
            # 2.6 and later keep the real path; 2.4.0 keeps the name as given.
            given = os.path.expanduser(dir_name)
            self._dir_path = dir_name if __version__ == "2.4.0" else os.path.realpath(given)
        elif dir_name is None:
            self._dir_path = None
        else:
            print_warn_msg("Invalid parameter dir_name, reset it to default.")
            self._dir_path = None

    def delete_export_only_prof(self) -> None:
        if self._export_only_mode:
            self.delete_prof_dir()

    def create_prof_dir(self) -> None:
        dir_path = self._dir_path
        if not dir_path:
            work_path = os.getenv(Constant.ASCEND_WORK_PATH)
            self._export_only_mode = self._export_only_mode and work_path is None
            if work_path:
                dir_path = os.path.join(os.path.abspath(work_path), Constant.PROFILING_WORK_PATH)
            elif self._export_only_mode:
                dir_path = os.path.join(os.getcwd(), self._export_only_prof_dir)
            else:
                dir_path = os.getcwd()
        name = session_name(self._worker_name, os.getpid(), datetime.now(tz=timezone.utc))
        self._prof_path = os.path.join(dir_path, name)
        os.makedirs(self._prof_path, mode=0o750, exist_ok=True)
        self.is_prof_inited = True

    def get_prof_dir(self) -> str:
        return self._prof_path

    def delete_prof_dir(self) -> None:
        try:
            shutil.rmtree(self._prof_path)
        except Exception:  # noqa: BLE001 - the real one only warns
            print_warn_msg("Remove temporary profiling data saving path failed.")
