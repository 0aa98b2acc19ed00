# ttap-fix recipe=optimizer-foreach at="scaler.step(optimizer)" facts=device:cuda
import torch
from torch.optim import RMSprop

model = build().cuda()
optimizer = RMSprop(model.parameters(),
                    lr=1e-2,
                    alpha=0.9)
scaler = torch.cuda.amp.GradScaler()

for x in loader:
    with torch.autocast("cuda"):
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
