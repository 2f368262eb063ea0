"""NEURON-Fabric gateware: Amaranth components for near-memory low-bit gradient aggregation."""
