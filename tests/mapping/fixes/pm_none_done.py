# ttap-fix recipe=pin-memory-non-blocking at="x = x.to(device, non_blocking=True)" expect=none
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=4, pin_memory=True)
for x in loader:
    x = x.to(device, non_blocking=True)
