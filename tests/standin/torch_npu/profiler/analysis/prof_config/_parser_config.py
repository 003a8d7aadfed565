"""STAND-IN for torch_npu/profiler/analysis/prof_config/_parser_config.py and _parser_deps_config.py.

The steps of tensorboard_trace_handler's parse, by the names of the real parser classes, per
export type: ``COMMON_CONFIG`` when CANN data exists (``LEVEL_NONE_CONFIG`` at Level_none),
``ONLY_FWK_CONFIG`` without it; and ``SUB_PROCESS``, the steps the real task manager runs in a
forked process of their own (ConcurrentMode.SUB_PROCESS; the others run in threads of the parse's
process). tests/test_npu_contract.py compares both with the release's sources.
"""

from torch_npu.version import __version__

if __version__ == "2.4.0":
    LEVEL_NONE_CONFIG = {
        "text": [
            "TracePreParser",
            "TreeBuildParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "RelationParser",
            "MemoryPrepareParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "MemoryViewParser",
            "IntegrateParser",
        ],
        "db": [
            "CANNExportParser",
            "DbParser",
            "CANNTimelineParser",
            "CANNAnalyzeParser",
            "FwkApiDbParser",
            "TreeBuildParser",
            "MemoryPrepareParser",
            "MemoryDbParser",
            "GCRecordDbParser",
        ],
    }
    COMMON_CONFIG = {
        "text": [
            "TracePreParser",
            "TreeBuildParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "RelationParser",
            "MemoryPrepareParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "KernelViewParser",
            "TraceStepTimeParser",
            "MemoryViewParser",
            "IntegrateParser",
            "CommunicationParser",
        ],
        "db": [
            "CANNExportParser",
            "DbParser",
            "CANNTimelineParser",
            "CANNAnalyzeParser",
            "FwkApiDbParser",
            "TreeBuildParser",
            "MemoryPrepareParser",
            "MemoryDbParser",
            "StepInfoDbParser",
            "CommunicationDbParser",
            "TraceStepTimeDbParser",
            "GCRecordDbParser",
        ],
    }
    ONLY_FWK_CONFIG = {
        "text": ["OperatorViewParser", "TraceViewParser", "MemoryViewParser"],
        "db": ["CANNExportParser", "DbParser", "FwkApiDbParser", "MemoryDbParser", "GCRecordDbParser"],
    }
    SUB_PROCESS = frozenset(
        {
            "TracePreParser",
            "CANNExportParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "KernelViewParser",
            "TraceStepTimeParser",
            "MemoryViewParser",
            "IntegrateParser",
            "CommunicationParser",
            "StackViewParser",
            "FwkApiDbParser",
            "MemoryDbParser",
            "StepInfoDbParser",
            "CommunicationDbParser",
            "TraceStepTimeDbParser",
            "GCRecordDbParser",
        }
    )
else:
    LEVEL_NONE_CONFIG = {
        "text": [
            "TaskQueueParser",
            "TorchOpParser",
            "TracePreParser",
            "TreeBuildParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "RelationParser",
            "MemoryPrepareParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "MemoryViewParser",
            "IntegrateParser",
        ],
        "db": [
            "TorchOpParser",
            "TaskQueueParser",
            "DbPreParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "CANNAnalyzeParser",
            "TreeBuildParser",
            "MemoryPrepareParser",
            "DbParser",
        ],
    }
    COMMON_CONFIG = {
        "text": [
            "TorchOpParser",
            "TaskQueueParser",
            "TracePreParser",
            "TreeBuildParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "RelationParser",
            "MemoryPrepareParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "KernelViewParser",
            "TraceStepTimeParser",
            "MemoryViewParser",
            "IntegrateParser",
            "CommunicationParser",
        ],
        "db": [
            "TorchOpParser",
            "TaskQueueParser",
            "DbPreParser",
            "CANNExportParser",
            "CANNTimelineParser",
            "CANNAnalyzeParser",
            "TreeBuildParser",
            "MemoryPrepareParser",
            "DbParser",
        ],
    }
    ONLY_FWK_CONFIG = {
        "text": [
            "TorchOpParser",
            "TaskQueueParser",
            "MemoryPrepareParser",
            "OperatorViewParser",
            "TraceViewParser",
            "MemoryViewParser",
        ],
        "db": ["TorchOpParser", "TaskQueueParser", "DbPreParser", "TreeBuildParser", "MemoryPrepareParser", "DbParser"],
    }
    SUB_PROCESS = frozenset(
        {
            "TracePreParser",
            "CANNExportParser",
            "CANNAnalyzeParser",
            "OperatorViewParser",
            "TraceViewParser",
            "KernelViewParser",
            "TraceStepTimeParser",
            "MemoryViewParser",
            "IntegrateParser",
            "CommunicationParser",
            "StackViewParser",
        }
    )
