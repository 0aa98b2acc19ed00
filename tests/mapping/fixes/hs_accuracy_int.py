# ttap-fix recipe=defer-host-sync at="correct += (preds == labels).sum().item()"
import torch


@torch.no_grad()
def evaluate(model, loader):
    correct = 0
    total = 0
    for images, labels in loader:
        preds = model(images).argmax(dim=1)
        total += labels.size(0)
        correct += (preds == labels).sum().item()
    print(f"accuracy: {100 * correct // total}%")
    return correct / total
