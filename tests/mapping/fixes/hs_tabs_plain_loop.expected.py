# ttap-fix recipe=defer-host-sync at="logger.info("
import logging

import torch

logger = logging.getLogger(__name__)


def fit(model, loader, opt):
	for step, (x, y) in enumerate(loader):
		loss = torch.nn.functional.mse_loss(model(x), y)
		loss.backward()
		opt.step()
		if step % 100 == 0:
			logger.info(
				"loss %.4f",
				loss.item(),
			)
