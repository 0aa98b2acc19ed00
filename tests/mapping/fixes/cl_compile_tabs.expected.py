# ttap-fix recipe=channels-last at="out = model(x)"
import torch


def bench(loader):
	model = Net().cuda()
	model = torch.compile(model)
	model = model.to(memory_format=torch.channels_last)
	for x in loader:
		x = x.cuda(memory_format=torch.channels_last)
		out = model(x)
