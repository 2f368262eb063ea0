"""The host runtime of NEURON-Fabric: which gradients take the device's low-bit routes, and when.

- :mod:`runtime.profile`: operating profiles (TOML) mapping parameter names and training phases
  to routes, and the health thresholds.
- :mod:`runtime.capabilities`: the device facts, read from its capability registers.
- :mod:`runtime.binding`: a model's parameters bound to routes, admitted against the device's
  capacity, placed in regions and programmed through :class:`driver.NeuronFabric`.
- :mod:`runtime.lowbit`: packing of gradients into contribution lines and the update rule that
  turns a majority or gated line back into a gradient.
- :mod:`runtime.reducers`: backends that reduce contribution lines across workers, bit-exact
  with each other.
- :mod:`runtime.health`: the health monitor's state machine (trip, cool-down, re-admission).
- :mod:`runtime.hook`: the DDP communication hook.
- :mod:`runtime.calibrate`: a calibration run that scores each parameter's low-bit aggregate
  against FP32 and proposes a profile.
- :mod:`runtime.events`: the log in which every decision is an event.
"""
