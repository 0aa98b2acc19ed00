# ttap-fix recipe=zero-grad-set-to-none at="for w in weights:" expect=refuse
import torch as T

weights = [T.zeros(3, requires_grad=True)]
for w in weights:
    w.grad.zero_()
