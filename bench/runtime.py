"""Shared pieces of the runtime's tests and ``make train``: a golden device read through its
capability registers, a model bound and programmed on it, and a small model with a tied head."""

import asyncio

import torch

from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.binding import bind, program
from runtime.capabilities import read_capabilities

__all__ = ["golden_device", "bind_golden", "TiedModel"]


def golden_device(params):
    """``(device, caps)``: a :class:`driver.NeuronFabric` over a fresh golden device model of
    ``params`` (:class:`golden.transport.GoldenTransport`, its ``transport``) and the
    capabilities read from its registers."""
    device = NeuronFabric(GoldenTransport(params), params)
    return device, asyncio.run(read_capabilities(device))


def bind_golden(model, profile, params, world_size, events):
    """``(binding, device)``: ``model`` bound by ``profile`` for ``world_size`` workers on a
    fresh golden device of ``params`` (decisions to ``events``), its regions programmed."""
    device, caps = golden_device(params)
    binding = bind(model, profile, caps, world_size, events)
    asyncio.run(program(device, binding))
    return binding, device


class TiedModel(torch.nn.Module):
    """Tokens to a class: an ``embed``-ding (averaged over the tokens), a ``body`` of two
    layers (``body.0``, ``body.2``) and a ``head`` whose weight is the embedding's."""

    def __init__(self, vocab=40, width=48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                                        torch.nn.Linear(width, width))
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens).mean(dim=1)))
