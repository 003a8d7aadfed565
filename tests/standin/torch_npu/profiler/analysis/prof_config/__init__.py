"""STAND-IN for torch_npu/profiler/analysis/prof_config: which parse steps a window's parse runs."""
