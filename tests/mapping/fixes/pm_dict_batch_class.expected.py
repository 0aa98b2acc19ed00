# ttap-fix recipe=pin-memory-non-blocking at="batch = {k: v.to(self.device)"
import torch
from torch.utils.data import DataLoader


class Finetuner:
    def __init__(self, model, dataset, device="cuda"):
        self.model = model.to(device)
        self.device = device
        self.loader = DataLoader(dataset, batch_size=16, collate_fn=dataset.collate,
                                 pin_memory=True)

    def run(self):
        for batch in self.loader:
            batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
            self.model(**batch).loss.backward()
