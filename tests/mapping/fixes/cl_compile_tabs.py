# ttap-fix recipe=channels-last at="out = model(x)"
import torch


def bench(loader):
	model = Net().cuda()
	model = torch.compile(model)
	for x in loader:
		x = x.cuda()
		out = model(x)
