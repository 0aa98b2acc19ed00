# ttap-fix recipe=pin-memory-non-blocking at="preds = logits.cpu()" expect=refuse
import torch

for x in loader:
    logits = model(x.cuda(non_blocking=True))
    preds = logits.cpu()
