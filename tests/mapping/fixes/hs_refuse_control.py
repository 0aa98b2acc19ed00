# ttap-fix recipe=defer-host-sync at="if loss.item() < 1e-3:" expect=refuse
import torch

for x in loader:
    loss = model(x).mean()
    if loss.item() < 1e-3:
        break
