"""Formal proofs of the RTL with SymbiYosys (``make formal``).

- :mod:`formal.sby`: writes a harness's RTLIL and a ``.sby`` file, runs SymbiYosys, reads the
  result.
- :mod:`formal.history`: the registers a harness keeps of the past (values some clocks ago).
- :mod:`formal.datapath`, :mod:`formal.registers`, :mod:`formal.responder`,
  :mod:`formal.controller`: property harnesses, each an Amaranth elaboratable that wraps one
  design at a small configuration, drives its inputs with free values under assumptions, and
  asserts one property of ``docs/spec.md`` (the last at the whole controller's ports, with a
  model of device memory behind its AXI4 port).
- :mod:`formal.mutations`: for every property, a deliberately broken variant of the design
  that must fail it.
- :mod:`formal.properties`: the catalogue (property, design, configuration, engine, mode and
  depth, mutation); :mod:`formal.run` runs it and writes ``build/reports/formal.md``.
"""
