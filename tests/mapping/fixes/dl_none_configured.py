# ttap-fix recipe=dataloader-workers at="for batch in loader:" expect=none
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32, num_workers=8, pin_memory=True, persistent_workers=True)
for batch in loader:
    step(batch)
