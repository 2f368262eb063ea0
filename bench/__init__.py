"""The simulation library that the tests (``verif/``) and the experiments (``scripts/``) share:
the simulator runner, the ``amaranth.sim`` helpers (running a simulation, stream handshakes,
CSR bus accesses), region tables for the control-register and decode tests, cocotb stream
drivers, a CXL.mem host, an AXI4 device-memory model, the controller bench with its golden
device model, and the stimulus, payload and scoreboard helpers of the datapath regressions. It
holds no tests.
"""
