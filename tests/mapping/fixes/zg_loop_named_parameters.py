# ttap-fix recipe=zero-grad-set-to-none at="for name, param in self.net.named_parameters():"
import torch
import torch.optim as optim


class Runner:
    def __init__(self, net):
        self.net = net
        self.opt = optim.SGD(self.net.parameters(), lr=0.01)

    def step(self, x):
        for name, param in self.net.named_parameters():
            param.grad.data.zero_()
        self.net(x).sum().backward()
        self.opt.step()
