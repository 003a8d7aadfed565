"""torch_npu.profiler on Ascend NPU, built from the same options as the torch backend."""

from __future__ import annotations

import os

from npuprof_launch import naming, status

LEVEL_NAMES = {"level_none": "Level_none", "level0": "Level0", "level1": "Level1", "level2": "Level2"}


class NpuBackend:
    name = "npu"

    def __init__(self, note_warning) -> None:
        self.note_warning = note_warning
        self._handler = None

    def build(self, config, on_trace_ready):
        import torch_npu

        profiler = torch_npu.profiler
        activity = profiler.ProfilerActivity
        wanted = config.activities or ("cpu", "npu")
        activities = [activity.CPU if name == "cpu" else activity.NPU for name in wanted if name != "cuda"]
        export_types = [profiler.ExportType.Text if t == "text" else profiler.ExportType.Db for t in config.export_type]
        experimental = profiler._ExperimentalConfig(
            profiler_level=getattr(profiler.ProfilerLevel, LEVEL_NAMES[config.level]),
            aic_metrics=getattr(profiler.AiCMetrics, config.aic_metrics),
            export_type=export_types,
        )
        self._output_dir = None
        schedule = profiler.schedule(
            wait=config.wait, warmup=config.warmup, active=config.active, repeat=config.repeat, skip_first=0
        )
        return profiler.profile(
            activities=activities,
            schedule=schedule,
            on_trace_ready=on_trace_ready,
            record_shapes=config.record_shapes,
            profile_memory=config.profile_memory,
            with_stack=config.with_stack,
            with_flops=config.with_flops,
            with_modules=config.with_modules,
            experimental_config=experimental,
        )

    def export(self, prof, output_dir: str, worker: str) -> list[str]:
        """Hand the window to torch_npu's own trace handler; report the ``*_ascend_pt`` it created."""
        import torch_npu

        status.make_dirs(output_dir)
        before = set(os.listdir(output_dir))
        handler = torch_npu.profiler.tensorboard_trace_handler(output_dir, worker_name=worker)
        handler(prof)
        created = sorted(set(os.listdir(output_dir)) - before)
        return [os.path.join(output_dir, name) for name in created if name.endswith(naming.ASCEND_DIR_SUFFIX)]
