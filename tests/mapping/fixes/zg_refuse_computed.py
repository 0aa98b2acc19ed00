# ttap-fix recipe=zero-grad-set-to-none at="zero_grad(" expect=refuse
import torch

for x in data:
    optimizer.zero_grad(set_to_none=cfg.grads_to_none)
    model(x).sum().backward()
    optimizer.step()
