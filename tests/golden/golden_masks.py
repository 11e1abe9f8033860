"""Masks shared by the independent references loss_reference.py and mismatch_reference.py: prefix masks (a response
then padding) and masks with holes (tool observations between the policy's own tokens). Plain data, no gspo code."""
import torch


def prefix_mask(n, t, lengths):
    mask = torch.zeros(n, t, dtype=torch.float64)
    for i, length in enumerate(lengths):
        mask[i, :length] = 1
    return mask


# Masks with holes: runs of zeros between ones, as tool observations sit between the policy's turns.
HOLE_MASKS = [
    [1, 1, 0, 0, 0, 1, 1, 1, 0],  # one observation mid-response, then padding
    [1, 0, 0, 1, 1, 1, 0, 0, 0],  # a hole right after the first token
    [1, 1, 0, 1, 0, 0, 1, 1, 1],  # several holes, no padding
    [1, 1, 1, 1, 1, 1, 1, 1, 1],  # no hole
    [1, 0, 1, 0, 1, 0, 1, 0, 1],  # every other token
    [1, 0, 0, 0, 0, 0, 0, 0, 1],  # two tokens, far apart
    [0, 0, 1, 1, 0, 1, 0, 0, 0],  # starts with masked tokens
    [1, 0, 0, 0, 0, 0, 0, 0, 0],  # one token
]
