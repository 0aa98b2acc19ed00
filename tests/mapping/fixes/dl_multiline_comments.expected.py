# ttap-fix recipe=dataloader-workers at="enumerate(train_loader)"
import torch
import torch.utils.data as data


def batches(cfg, dataset):
    train_loader = data.DataLoader(
        dataset,
        batch_size=cfg.batch_size,  # per GPU
        shuffle=True,
        num_workers=8,  # TODO: raise once the dataset is thread-safe
        drop_last=True,
        pin_memory=True,
        persistent_workers=True
    )
    for step, (images, targets) in enumerate(train_loader):
        yield images.cuda(), targets.cuda()
