"""Step functions of every kind, for --target: each call does a little torch work."""

import threading

import torch

torch.manual_seed(0)
WEIGHT = torch.randn(16, 16)


def step(x: torch.Tensor) -> torch.Tensor:
    """One step: a matmul and a tanh."""
    return torch.tanh(x @ WEIGHT)


def recursive_step(x: torch.Tensor, depth: int = 3) -> torch.Tensor:
    """Calls itself: the outermost call is the step."""
    return x if depth == 0 else recursive_step(step(x), depth - 1)


def threaded_step(x: torch.Tensor, nested: bool = True) -> torch.Tensor:
    """Calls itself from another thread while it is in flight: still one step per outer call."""
    if nested:
        box = []
        worker = threading.Thread(target=lambda: box.append(threaded_step(x, nested=False)))
        worker.start()
        worker.join()
        x = box[0]
    return step(x)


def unused(x: torch.Tensor) -> torch.Tensor:
    """Never called by the test jobs."""
    return x


class Engine:
    """Methods of each kind."""

    scale = 0.5

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """An instance method."""
        return step(x) * self.scale

    @classmethod
    def class_step(cls, x: torch.Tensor) -> torch.Tensor:
        """A classmethod."""
        return step(x) * cls.scale

    @staticmethod
    def static_step(x: torch.Tensor) -> torch.Tensor:
        """A staticmethod."""
        return step(x) + 1

    class Inner:
        """A nested class."""

        def step(self, x: torch.Tensor) -> torch.Tensor:
            return step(x) - 1
