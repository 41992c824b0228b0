"""The losses as modules (torch.nn's CrossEntropyLoss and MSELoss, mean reduction)."""
from .._normlab import cross_entropy, mse_loss
from .module import Module

__all__ = ["CrossEntropyLoss", "MSELoss"]


def _check_reduction(who, reduction):
    if reduction != "mean":
        raise ValueError(f"{who}: only reduction='mean' is supported, got {reduction!r}")


class CrossEntropyLoss(Module):
    """-mean_i log softmax(input_i)[target_i], input (N, C) logits, target (N) class indices."""

    def __init__(self, reduction="mean"):
        super().__init__()
        _check_reduction("CrossEntropyLoss", reduction)

    def forward(self, input, target):
        return cross_entropy(input, target)


class MSELoss(Module):
    """mean((input - target)^2), input and target of the same shape."""

    def __init__(self, reduction="mean"):
        super().__init__()
        _check_reduction("MSELoss", reduction)

    def forward(self, input, target):
        return mse_loss(input, target)
