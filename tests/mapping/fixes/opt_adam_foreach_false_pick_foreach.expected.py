# ttap-fix recipe=optimizer-foreach at="opt.step()" facts=device:cuda pick=1
import torch
from torch import optim

net = torch.nn.Linear(4, 4).cuda()
opt = optim.Adam(net.parameters(), lr=1e-3, foreach=True)
for x in batches:
    net(x).sum().backward()
    opt.step()
    opt.zero_grad()
