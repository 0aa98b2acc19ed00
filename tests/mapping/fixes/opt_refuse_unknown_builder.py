# ttap-fix recipe=optimizer-foreach at="optimizer.step()" expect=refuse
import torch
from mylib.optim import build_optimizer

optimizer = build_optimizer(cfg, model)
for x in loader:
    model(x).sum().backward()
    optimizer.step()
