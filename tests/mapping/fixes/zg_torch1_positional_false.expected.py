# ttap-fix recipe=zero-grad-set-to-none at="zero_grad(False)" facts=torch_before_2:1
import torch

for x in batches:
    opt.zero_grad(set_to_none=True)
    net(x).sum().backward()
    opt.step()
