# ttap-fix recipe=optimizer-foreach at="optimizer.step(closure)" expect=refuse
import torch

optimizer = torch.optim.LBFGS(model.parameters(), lr=1)
for x in loader:
    optimizer.step(closure)
