# ttap-fix recipe=dataloader-workers at="for batch in get_batches(cfg):" expect=refuse
from data import get_batches

for batch in get_batches(cfg):
    step(batch)
