# ttap-fix recipe=defer-host-sync at="writer.add_scalar("
import torch
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter()
global_step = 0
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    if global_step % 100 == 0:
        writer.add_scalar("train/loss", loss.item(), global_step)
    global_step += 1
