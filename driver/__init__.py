"""Host-side driver for NEURON-Fabric devices (see :mod:`driver.device`)."""

from .device import ConfigurationError, DeviceError, NeuronFabric

__all__ = ["NeuronFabric", "DeviceError", "ConfigurationError"]
