# ttap-fix recipe=zero-grad-set-to-none at="model.zero_grad("
import torch


def step(model, opt, x):
    model.zero_grad()
    model(x).sum().backward()
    opt.step()
