# ttap-fix recipe=dataloader-workers at="for batch in self.train_loader:" facts=device:cpu
from torch.utils.data import DataLoader


class Experiment:
    def __init__(self, dataset):
        self.dataset = dataset
        self.train_loader = DataLoader(self.dataset, batch_size=128, num_workers=2)

    def epoch(self, model):
        for batch in self.train_loader:
            model.train_step(batch)
