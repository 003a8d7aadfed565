"""STAND-IN for torch_npu/profiler/analysis/prof_common_func/_log.py (2.6 and later; 2.4.0 has none).

The parse's log files, as the real ProfilerLogger writes them: ``logs/profiler_{local
%Y%m%d%H%M%S}_{pid}_{name}.log`` in the session directory, lines "[%Y-%m-%d-%H:%M:%S.mmm]
[LEVEL] [AscendProfiler_{name}:line] message". It is one logger per process: a process that has
one keeps it (a pool worker that parses a second session goes on logging into the first one's
file, as the real one does), and a forked parser step starts its own.
"""

import logging
import os
from datetime import datetime, timezone
from logging.handlers import RotatingFileHandler
from typing import Optional


class ProfilerLogger:
    LOG_FORMAT = "[%(asctime)s.%(msecs)03d] [%(levelname)s] [%(name)s:%(lineno)d] %(message)s"
    DATE_FORMAT = "%Y-%m-%d-%H:%M:%S"
    DEFAULT_LOGGER_NAME = "AscendProfiler"
    DEFAULT_LOG_LEVEL = logging.INFO
    DEFAULT_LOG_DIR = "logs"
    MAX_BYTES = 10 * 1024 * 1024
    BACKUP_COUNT = 3
    _instance = None
    _pid = None

    @classmethod
    def get_instance(cls) -> logging.Logger:
        if cls._instance is None:
            raise RuntimeError("Logger not initialized. Call init first.")
        return cls._instance

    @classmethod
    def init(cls, output_dir: str, custom_name: Optional[str] = None) -> None:
        if cls._instance is not None and cls._pid == os.getpid():
            return
        log_dir = os.path.join(output_dir, cls.DEFAULT_LOG_DIR)
        os.makedirs(log_dir, mode=0o750, exist_ok=True)
        name = f"{cls.DEFAULT_LOGGER_NAME}_{custom_name}" if custom_name else cls.DEFAULT_LOGGER_NAME
        logger = logging.getLogger(name)
        logger.setLevel(cls.DEFAULT_LOG_LEVEL)
        logger.propagate = False
        formatter = logging.Formatter(fmt=cls.LOG_FORMAT, datefmt=cls.DATE_FORMAT)
        timestamp = datetime.now(tz=timezone.utc).astimezone().strftime("%Y%m%d%H%M%S")
        suffix = f"_{custom_name}" if custom_name else ""
        log_file = os.path.join(log_dir, f"profiler_{timestamp}_{os.getpid()}{suffix}.log")
        handler = RotatingFileHandler(
            filename=log_file, maxBytes=cls.MAX_BYTES, backupCount=cls.BACKUP_COUNT, encoding="utf-8"
        )
        handler.setFormatter(formatter)
        handler.setLevel(cls.DEFAULT_LOG_LEVEL)
        logger.addHandler(handler)
        cls._instance = logger
        cls._pid = os.getpid()
        logger.info("Profiler logger initialized at: %s", log_file)

    @classmethod
    def destroy(cls) -> None:
        if cls._instance:
            for handler in cls._instance.handlers[:]:
                cls._instance.removeHandler(handler)
                handler.close()
            cls._instance = None
