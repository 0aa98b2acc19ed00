# ttap-fix recipe=optimizer-foreach at="self.optimizer.step()" facts=device:cuda
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(
            self.model.parameters(),
            lr=0.1,  # tuned on the validation set
            momentum=0.9,
            nesterov=True,
        )

    @torch.no_grad()
    def evaluate(self, x):
        return self.model(x)

    @staticmethod
    def loss_fn(out, y):
        return ((out - y) ** 2).mean()

    def fit(self, data):
        for x, y in data:
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
