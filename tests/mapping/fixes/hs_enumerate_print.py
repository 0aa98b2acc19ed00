# ttap-fix recipe=defer-host-sync at="print(f" facts=sync_every:50
import torch


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss={loss.item():.4f}")  # every step
