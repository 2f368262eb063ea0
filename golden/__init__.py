"""NumPy golden model of the NEURON-Fabric device specification (``docs/spec.md``).

Every function works on many lines at once: arrays whose first axis indexes lines.
"""
