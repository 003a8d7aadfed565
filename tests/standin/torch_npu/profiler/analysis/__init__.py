"""STAND-IN for torch_npu/profiler/analysis: the parse of session directories (see tests/standin/README.md)."""
