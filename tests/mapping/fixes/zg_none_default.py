# ttap-fix recipe=zero-grad-set-to-none at="optimizer.zero_grad()" expect=none
import torch

for x in data:
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
