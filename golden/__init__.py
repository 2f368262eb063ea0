"""NumPy golden model of the NEURON-Fabric device contract (``../shared/spec/contract.md``).

Every function works on many lines at once: arrays whose first axis indexes lines.
"""
