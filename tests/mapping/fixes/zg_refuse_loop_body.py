# ttap-fix recipe=zero-grad-set-to-none at="for p in model.parameters():" expect=refuse
import torch

for p in model.parameters():
    p.grad.detach_()
    p.grad.zero_()
