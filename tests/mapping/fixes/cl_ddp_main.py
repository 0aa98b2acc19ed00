# ttap-fix recipe=channels-last at="output = ddp_model(images)"
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank = int(os.environ["LOCAL_RANK"])
    model = build_model()
    model = model.to(rank)  # move before wrapping
    ddp_model = DDP(model, device_ids=[rank])
    for images, target in loader:
        images = images.to(rank, non_blocking=True)
        output = ddp_model(images)
        loss = criterion(output, target.to(rank))
        loss.backward()


if __name__ == "__main__":
    main()
