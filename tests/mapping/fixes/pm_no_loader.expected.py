# ttap-fix recipe=pin-memory-non-blocking at="x = torch.from_numpy(frame)"
import numpy as np
import torch

while True:
    frame = camera.read()
    x = torch.from_numpy(frame).to("cuda", non_blocking=True)
    detector(x)
