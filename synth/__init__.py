"""Synthesis and place-and-route flows (YoWASP Yosys and nextpnr-ecp5) and their reports."""
