# ttap-fix recipe=pin-memory-non-blocking at="x, y = x.to(device), y.to(device)"
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(dataset, batch_size=256, shuffle=True, num_workers=4)

for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = model(x, y)
