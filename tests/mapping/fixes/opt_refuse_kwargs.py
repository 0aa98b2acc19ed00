# ttap-fix recipe=optimizer-foreach at="optimizer.step()" expect=refuse
import torch

optimizer = torch.optim.SGD(model.parameters(), **cfg.optimizer)
optimizer.step()
