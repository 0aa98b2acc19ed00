import torch
from torch.utils.data import DataLoader

ds = make_dataset()
loader = DataLoader(ds, batch_size=32)
model = make_model()




# the training loop: é 𝛼
for batch in loader:
    loss = model(batch)
