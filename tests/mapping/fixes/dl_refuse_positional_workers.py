# ttap-fix recipe=dataloader-workers at="for batch in loader:" expect=refuse
from torch.utils.data import DataLoader

loader = DataLoader(dataset, 32, True, None, None, 0)
for batch in loader:
    step(batch)
