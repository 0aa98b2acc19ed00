# ttap-fix recipe=dataloader-workers at="for batch in loader:" expect=refuse
from torch.utils.data import DataLoader

loader = DataLoader(dataset, **loader_kwargs)
for batch in loader:
    step(batch)
