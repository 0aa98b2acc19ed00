# ttap-fix recipe=defer-host-sync at="total += loss.item()" expect=refuse
import torch

total = 0.0
for step, x in enumerate(loader):
    loss = model(x).mean()
    total += loss.item()
    pbar.set_postfix(avg=total / (step + 1))
