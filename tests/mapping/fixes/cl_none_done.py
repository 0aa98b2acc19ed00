# ttap-fix recipe=channels-last at="out = model(x)" expect=none
import torch

model = Net().cuda()
model = model.to(memory_format=torch.channels_last)
for x in loader:
    x = x.cuda(memory_format=torch.channels_last)
    out = model(x)
