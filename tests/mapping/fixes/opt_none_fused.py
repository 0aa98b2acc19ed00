# ttap-fix recipe=optimizer-foreach at="optimizer.step()" facts=device:cuda expect=none
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
optimizer.step()
