"""What undoing a training step's update puts back (:meth:`runtime.hook.NeuronFabricHook.guard`).

A loss is measured after the update that caused it: the loss of step ``t`` is that of the
weights step ``t - 1``'s update made. :class:`UpdateGuard` keeps, each step, a copy of what
that update will change: the optimizer's parameters, their optimizer state (momentum buffers)
and the hook's momenta as they were before the step's gradient was added. :meth:`undo` puts
back the copy of the step before and clears the gradients, so that ``optimizer.step()``
applies nothing. The optimizer's ``param_groups`` (learning rates, as a scheduler sets them)
are left as they are.
"""

import copy

import torch

__all__ = ["UpdateGuard"]


def _copies(tensors):
    return {name: tensor.clone() for name, tensor in tensors.items()}


class UpdateGuard:
    """Copies, a step behind, of ``optimizer``'s parameters and state and of the hook's
    momenta."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self._momenta = {}
        self._kept = None

    def _parameters(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def step_begins(self, momenta):
        """The hook's momenta at the start of a step's backward pass, before its gradient."""
        self._momenta = _copies(momenta)

    def keep(self):
        """After the backward pass, before ``optimizer.step()``: keep what undoing this step's
        update would put back."""
        parameters = self._parameters()
        state = self.optimizer.state
        self._kept = ([p.detach().clone() for p in parameters],
                      {p: copy.deepcopy(state[p]) for p in parameters if p in state},
                      self._momenta)

    def can_undo(self):
        """Whether a step has been kept."""
        return self._kept is not None

    def undo(self):
        """Put back the parameters and their optimizer state of the step kept last, clear every
        gradient, and return the hook's momenta of that step (copies)."""
        weights, states, momenta = self._kept
        with torch.no_grad():
            for p, value in zip(self._parameters(), weights):
                p.copy_(value)
                p.grad = None
                if p in states:
                    self.optimizer.state[p] = copy.deepcopy(states[p])
                else:
                    self.optimizer.state.pop(p, None)
        return _copies(momenta)
