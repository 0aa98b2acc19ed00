# ttap-fix recipe=dataloader-workers at="for batch in loader:" facts=cpu_count:4
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader):
    for batch in loader:
        model(batch[0]).sum().backward()


if __name__ == "__main__":
    dataset = TensorDataset(torch.randn(1024, 3, 32, 32))
    loader = DataLoader(dataset, batch_size=64, shuffle=True,
                        num_workers=4, pin_memory=True, persistent_workers=True)
    train(torch.nn.Conv2d(3, 8, 3), loader)
