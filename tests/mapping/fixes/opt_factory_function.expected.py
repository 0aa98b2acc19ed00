# ttap-fix recipe=optimizer-foreach at="opt.step()"
import torch


def make_optimizer(model, lr):
    return torch.optim.Adagrad(model.parameters(), lr=lr, foreach=True)


def train(net, data):
    opt = make_optimizer(net, 0.1)
    for x in data:
        net(x).sum().backward()
        opt.step()
