# ttap-fix recipe=dataloader-workers at="batch = next(it)" facts=cpu_count:2
import torch
from torch.utils.data import DataLoader

it = iter(DataLoader(ds, batch_size=8, pin_memory=False))
while True:
    batch = next(it)
