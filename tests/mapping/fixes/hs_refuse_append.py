# ttap-fix recipe=defer-host-sync at="losses.append(loss.item())" expect=refuse
import torch

losses = []
for x in loader:
    loss = model(x).mean()
    losses.append(loss.item())
