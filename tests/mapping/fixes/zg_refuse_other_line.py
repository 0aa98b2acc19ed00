# ttap-fix recipe=zero-grad-set-to-none at="loss.backward()" expect=refuse
import torch

loss = model(x).sum()
loss.backward()
