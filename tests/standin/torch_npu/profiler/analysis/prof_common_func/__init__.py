"""STAND-IN for torch_npu/profiler/analysis/prof_common_func: only the module that prints the profiler's messages."""
