# ttap-fix recipe=zero-grad-set-to-none at="for p in self.model.parameters():" facts=torch_before_2:1
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train_step(self, x, y):
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.zero_()
        loss = torch.nn.functional.l1_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
