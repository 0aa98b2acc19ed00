# ttap-fix recipe=optimizer-foreach at="optimizer.step()" facts=device:cuda
import torch
from torch import nn


def main():
    model = nn.Linear(1024, 1024).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    for _ in range(10):
        x = torch.randn(64, 1024, device="cuda")
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
