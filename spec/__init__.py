"""The definitions every package shares: generator parameters and the numbers derived from them
(:mod:`spec.params`), the control-register map (:mod:`spec.regmap`), the CXL.mem message layouts
(:mod:`spec.cxl`) and the line and accumulator-state formats (:mod:`spec.formats`).

``hdl/``, ``golden/``, ``driver/`` and the tests import these and never restate a number.
The rules they encode are written for users in ``docs/spec.md``.
"""
