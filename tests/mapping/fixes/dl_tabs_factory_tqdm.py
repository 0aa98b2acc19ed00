# ttap-fix recipe=dataloader-workers at="for x, y in tqdm(loader" facts=cpu_count:16,device:cuda
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def make_loader(ds, bs):
	loader = DataLoader(ds, batch_size=bs,
	                    shuffle=True)
	return loader


def run(ds):
	loader = make_loader(ds, 32)
	for x, y in tqdm(loader, desc="train"):
		pass
