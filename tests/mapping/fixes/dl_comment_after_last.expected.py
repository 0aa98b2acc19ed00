# ttap-fix recipe=dataloader-workers at="for sample in val_loader:" facts=cpu_count:8
from torch.utils.data import DataLoader

val_loader = DataLoader(val_set,
                        batch_size=32,
                        shuffle=False,  # deterministic order
                        num_workers=8,
                        pin_memory=True,
                        persistent_workers=True
                        )
for sample in val_loader:
    evaluate(sample)
