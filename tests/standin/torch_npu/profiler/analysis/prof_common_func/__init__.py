"""STAND-IN for torch_npu/profiler/analysis/prof_common_func: constants, messages, the parse's log, the call guard."""
