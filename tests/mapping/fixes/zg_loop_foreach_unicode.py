# ttap-fix recipe=zero-grad-set-to-none at="p.grad.zero_()"
# -*- coding: utf-8 -*-
"""Entraînement « maison » : remise à zéro des gradients."""
import torch

paramètres = [torch.randn(3, requires_grad=True) for _ in range(4)]
étiquette = "perte d'entraînement ✓"


def étape(données):
    for p in paramètres:
        if p.grad is not None:
            p.grad.zero_()
    perte = sum((p * données).sum() for p in paramètres)
    perte.backward()
    print(étiquette, perte.item())
