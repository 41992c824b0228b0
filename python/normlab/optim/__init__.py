"""normlab.optim: SGD, Adam and AdamW with torch.optim's names and defaults, and the learning-rate
schedules of normlab.optim.lr_scheduler."""
from . import lr_scheduler
from .optimizer import SGD, Adam, AdamW, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
