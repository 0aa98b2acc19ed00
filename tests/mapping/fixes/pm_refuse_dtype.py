# ttap-fix recipe=pin-memory-non-blocking at="x = x.to(torch.float16)" expect=refuse
import torch

for x in loader:
    x = x.to(torch.float16)
