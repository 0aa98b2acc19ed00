# ttap-fix recipe=defer-host-sync at="logger.info("
import logging

import torch

logger = logging.getLogger(__name__)


def fit(model, loader, opt):
	for x, y in loader:
		loss = torch.nn.functional.mse_loss(model(x), y)
		loss.backward()
		opt.step()
		logger.info(
			"loss %.4f",
			loss.item(),
		)
