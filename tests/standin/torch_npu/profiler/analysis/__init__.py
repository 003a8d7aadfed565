"""STAND-IN for torch_npu/profiler/analysis: only the module that prints the profiler's messages."""
