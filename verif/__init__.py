"""NEURON-Fabric verification: golden-model tests, amaranth.sim unit tests, cocotb regressions."""
