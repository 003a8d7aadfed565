"""The job's own number of the step before this process's first: what a resumed job has done already.

A job resumed from a checkpoint (Hugging Face Trainer's ``resume_from_checkpoint``, Lightning's
``ckpt_path``, a loop of the job's own that loads an optimizer's state) goes on with its own
numbering: its first step here is, say, global step 6. The optimizer clock asks ``job_numbering``
once, when it opens its session at the first boundary; the answer (an offset and where it came
from, a key of common/numbering.SOURCES) numbers the labels, ``ProfilerStep#`` and the record.
Where it looks, the most telling first:

* a training framework's own counter, on the stack of that first step: Hugging Face's
  ``Trainer.state.global_step``, Lightning's ``Trainer.global_step``. Both are read inside the
  step, before the framework adds it (they count steps done), so each is the offset itself;
* the step count of an optimizer state loaded before the first step: the Adam family (Adam,
  AdamW, NAdam, RAdam, Adamax, Adagrad, RMSprop...) keeps one per parameter (``state[p]["step"]``),
  which ``Optimizer.load_state_dict`` brings back; the largest is read at the load (``watch_loads``),
  a moment of the job's own outside any step, so the first step reads a plain number;
* a loaded state without a count (SGD keeps none): the job's numbering is unknown; an empty state
  loaded by an optimizer that keeps one once it steps resumed nothing (Accelerate loads each
  optimizer's own back, moved to its device);
* nothing loaded: the job begins here, numbered from 1.

Nothing here runs per step. Every failure is caught: a numbering is never worth the job.
"""

from __future__ import annotations

import functools
import sys

from npuprof_launch.common import numbering

#: The classes whose instances hold a framework's step counter: (module prefixes, class name, reader).
FRAMEWORKS = (
    (("transformers.",), "Trainer", numbering.HF_TRAINER, lambda trainer: trainer.state.global_step),
    (("lightning.pytorch.", "pytorch_lightning."), "Trainer", numbering.LIGHTNING, lambda trainer: trainer.global_step),
)


class _Loads:
    """What the optimizer states loaded so far in this process said about the job's steps."""

    #: The largest step count of a loaded optimizer state; None when none carried one.
    count: int | None = None
    #: An optimizer state without a step count was loaded (SGD's).
    without_count = False


_loads = _Loads()


def watch_loads(torch_module, say) -> None:
    """Note the step count of every optimizer state the job loads. Once per process; the load
    itself is untouched.

    Where torch gives optimizers load hooks (``register_load_state_dict_pre_hook``, 2.2 and later),
    each new optimizer gets one as torch sets it up (``Optimizer._patch_step_function``, which
    ``__init__`` and ``__setstate__`` call once the hook dicts exist): no frame of ours is on the
    stack while torch loads, so a warning or a traceback from inside ``load_state_dict`` reads as it
    does bare. An older torch gets ``load_state_dict`` itself wrapped (every subclass that calls it)."""
    base = torch_module.optim.Optimizer
    patch = base.__dict__.get("_patch_step_function")
    if patch is not None and hasattr(base, "register_load_state_dict_pre_hook"):
        if getattr(patch, "_npuprof_counted", False):
            return

        def noted(optimizer, state_dict):
            try:
                note_load(optimizer, state_dict)
            except Exception as exc:  # noqa: BLE001 - the job's load goes on whatever happens to us
                say(f"the step count of a loaded optimizer state could not be read: {exc!r}")

        @functools.wraps(patch)
        def _patch_step_function(self):
            patch(self)
            try:
                hooks = self.__dict__.get("_optimizer_load_state_dict_pre_hooks")
                if hooks is not None and noted not in hooks.values():
                    self.register_load_state_dict_pre_hook(noted)
            except Exception as exc:  # noqa: BLE001 - never the job's optimizer
                say(f"the step count of loaded optimizer states will not be read: {exc!r}")

        _patch_step_function._npuprof_counted = True  # type: ignore[attr-defined]  # a mark, read with getattr
        base._patch_step_function = _patch_step_function
        return
    load = base.__dict__.get("load_state_dict")
    if load is None or getattr(load, "_npuprof_counted", False):
        return

    @functools.wraps(load)
    def load_state_dict(self, state_dict, *args, **kwargs):
        try:
            note_load(self, state_dict)
        except Exception as exc:  # noqa: BLE001 - the job's load goes on whatever happens to us
            say(f"the step count of a loaded optimizer state could not be read: {exc!r}")
        return load(self, state_dict, *args, **kwargs)

    load_state_dict._npuprof_counted = True  # type: ignore[attr-defined]  # a mark on the function, read with getattr
    base.load_state_dict = load_state_dict


def step_count(state_dict) -> int | None:
    """The largest ``step`` of an optimizer state dict's per-parameter states; None without one.
    A step may be a number or a one-element tensor (torch >= 1.12 keeps a tensor)."""
    states = state_dict.get("state") if isinstance(state_dict, dict) else None
    found = None
    for state in (states or {}).values():
        step = state.get("step") if isinstance(state, dict) else None
        if step is None:
            continue
        value = int(step.item() if hasattr(step, "item") else step)
        found = value if found is None else max(found, value)
    return found


def note_load(optimizer, state_dict) -> None:
    """Note what a state ``optimizer`` loads says of the job's steps. A torch optimizer that keeps a
    state per parameter once it steps (all but SGD without momentum) and loads none has resumed
    nothing: Accelerate's ``prepare`` loads each optimizer's own fresh state back, moved to the device,
    and a fresh AdamW job was told its numbering was unknown (2026-12-05)."""
    count = step_count(state_dict)
    if count is None and _never_stepped(optimizer, state_dict):
        return
    note_loaded(count)


def _never_stepped(optimizer, state_dict) -> bool:
    if not isinstance(state_dict, dict) or state_dict.get("state"):
        return False
    kind = type(optimizer)
    if not kind.__module__.startswith("torch.optim"):
        return False  # another library's optimizer may keep no state at all: an empty one proves nothing
    if kind.__name__ == "SGD":  # its state is the momentum buffer, which it keeps only with momentum
        return all(group.get("momentum") for group in state_dict.get("param_groups") or [{}])
    return True


def note_loaded(count: int | None) -> None:
    if count is None:
        _loads.without_count = True
    else:
        _loads.count = count if _loads.count is None else max(_loads.count, count)


def job_numbering(frame=None) -> tuple[int, str]:
    """(offset, source): the job's number of the step before this process's first, and a key of
    numbering.SOURCES saying where it came from. Called once, at the first step, from inside it."""
    try:
        found = framework_count(frame if frame is not None else sys._getframe(1))
    except Exception:  # noqa: BLE001 - a framework's odd object: its counter is out of reach, the clock goes on
        found = None
    if found is not None:
        return found
    if _loads.count is not None:
        return _loads.count, numbering.OPTIMIZER_STATE
    if _loads.without_count:
        return 0, numbering.NO_COUNT
    return 0, numbering.FRESH


def framework_count(frame) -> tuple[int, str] | None:
    """A framework's trainer among the ``self`` of the frames from ``frame`` outwards, and its count."""
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name != "<module>" else None
        if owner is not None:
            for prefixes, name, source, read in FRAMEWORKS:
                if _is_instance_of(owner, prefixes, name):
                    count = read(owner)
                    if isinstance(count, int) and count >= 0:
                        return count, source
        frame = frame.f_back
    return None


def _is_instance_of(owner, prefixes: tuple[str, ...], name: str) -> bool:
    """Whether ``owner``'s class or a base of it is ``name`` in a module under one of ``prefixes``
    (the framework is never imported here: its classes are recognized by name)."""
    for klass in type(owner).__mro__:
        if klass.__name__ == name and klass.__module__.startswith(prefixes):
            return True
    return False
