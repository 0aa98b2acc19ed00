# ttap-fix recipe=channels-last at="x = self.conv1(x)" expect=refuse
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3)

    def forward(self, x):
        x = self.conv1(x)
        return x
