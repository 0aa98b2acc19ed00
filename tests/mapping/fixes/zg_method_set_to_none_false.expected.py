# ttap-fix recipe=zero-grad-set-to-none at="zero_grad(set_to_none=False)"
"""Trainer with a decorated step method."""
import functools

import torch
from torch import nn


def log_calls(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


class Trainer:
    def __init__(self, model: nn.Module, lr: float = 0.1) -> None:
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    @log_calls
    def train_step(self, batch):
        self.optimizer.zero_grad()  # keep the old behaviour
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        return loss
