# ttap-fix recipe=optimizer-foreach at="torch.optim.Adam(" facts=device:cpu
import torch

params = list(model.parameters())
optimizer = torch.optim.Adam(params, foreach=True)
