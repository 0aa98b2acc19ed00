# ttap-fix recipe=dataloader-workers at="batch = next(it)" facts=cpu_count:2
import torch
from torch.utils.data import DataLoader

it = iter(DataLoader(ds, batch_size=8, pin_memory=True, num_workers=2, persistent_workers=True))
while True:
    batch = next(it)
