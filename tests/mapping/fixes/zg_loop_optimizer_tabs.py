# ttap-fix recipe=zero-grad-set-to-none at="for p in model.parameters():"
import torch


def train(model, loader, epochs=1):
	optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
	for epoch in range(epochs):
		for x, y in loader:
			for p in model.parameters():  # reset gradients
				p.grad.zero_()
			loss = torch.nn.functional.mse_loss(model(x), y)
			loss.backward()
			optimizer.step()
