"""The block RAM with a registered output (hdl.bram): its two-clock read in the portable form
under ``amaranth.sim``, and the ECP5 form (DP16KD instances) under Icarus Verilog against a
model of the block in its 512 x 36 mode, both against the same reference; and the interleaved
layout of several values in its words."""

import subprocess

import numpy as np
import pytest
from amaranth import Const

from bench.sim import simulate
from hdl.bram import ECP5_DEPTH, ECP5_WIDTH, READ_LATENCY, Interleave, RegisteredMemory
from hdl.generate import component_verilog

#: A model of the DP16KD as ``RegisteredMemory`` sets it up (the LFE5U's sysMEM block in its
#: pseudo-dual-port 512 x 36 mode with the output registers on): write data bits 0-17 on the
#: DIA pins and 18-35 on DIB, written on CLKA where the byte enables ADA0-ADA3 are high, at
#: word ADA13-ADA5; read on CLKB at word ADB13-ADB5 into the array's output latch, which the
#: output register takes on the next CLKB edge; data bits 0-17 on DOA, 18-35 on DOB.
DP16KD_MODEL = """
module DP16KD #(parameter DATA_WIDTH_A = 36, DATA_WIDTH_B = 36, REGMODE_A = "OUTREG",
                REGMODE_B = "OUTREG", CSDECODE_A = "0b000", CSDECODE_B = "0b000",
                GSR = "DISABLED", RESETMODE = "SYNC") (%s);
  reg [35:0] array [0:511];
  reg [35:0] latch, out;
  wire [13:0] ada = {%s};
  wire [13:0] adb = {%s};
  wire [35:0] di = {%s};
  assign {%s} = out;
  integer k;
  initial for (k = 0; k < 512; k = k + 1) array[k] = 0;
  always @(posedge CLKA) if (CEA & WEA)
    for (k = 0; k < 4; k = k + 1) if (ada[k]) array[ada[13:5]][9 * k +: 9] <= di[9 * k +: 9];
  always @(posedge CLKB) if (CEB) begin
    latch <= array[adb[13:5]];
    if (OCEB) out <= latch;
  end
endmodule
"""


def _model():
    pins = lambda name, count: [f"{name}{k}" for k in range(count)]  # noqa: E731
    inputs = (pins("ADA", 14) + pins("ADB", 14) + pins("DIA", 18) + pins("DIB", 18)
              + ["CLKA", "CLKB", "CEA", "CEB", "OCEA", "OCEB", "WEA", "WEB", "RSTA", "RSTB"]
              + pins("CSA", 3) + pins("CSB", 3))
    outputs = pins("DOA", 18) + pins("DOB", 18)
    ports = ", ".join([f"input {p}" for p in inputs] + [f"output {p}" for p in outputs])
    msb_first = lambda names: ", ".join(reversed(names))  # noqa: E731
    return DP16KD_MODEL % (ports, msb_first(pins("ADA", 14)), msb_first(pins("ADB", 14)),
                           msb_first(pins("DIA", 18) + pins("DIB", 18)),
                           msb_first(pins("DOA", 18) + pins("DOB", 18)))


def _traffic(seed, width, depth, clocks):
    """Random writes and reads, and what each read must give :data:`READ_LATENCY` clocks
    later (``None`` where the read collided with a write of its word on its own edge, which
    the block does not define)."""
    rng = np.random.default_rng(seed)
    memory = [0] * depth
    words = rng.integers(0, depth, size=8)          # a few hot words: reads meet writes
    steps, expected = [], []
    for _ in range(clocks):
        write_addr = int(rng.choice(words)) if rng.random() < 0.7 else int(rng.integers(depth))
        read_addr = int(rng.choice(words)) if rng.random() < 0.7 else int(rng.integers(depth))
        write_en = int(rng.random() < 0.6)
        data = int(rng.integers(0, 1 << 62)) * (1 << 62) + int(rng.integers(0, 1 << 62))
        data &= (1 << width) - 1
        collided = write_en and write_addr == read_addr
        expected.append(None if collided else memory[read_addr])
        if write_en:
            memory[write_addr] = data
        steps.append((write_en, write_addr, data, read_addr))
    return steps, expected


@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("depth", [16, 1024])
def test_portable_form_reads_two_clocks_late(depth, copies):
    """Across three block columns, with one copy of the addresses or one per column."""
    width, clocks = 3 * ECP5_WIDTH - 4, 400
    steps, expected = _traffic(depth, width, depth, clocks)
    dut = RegisteredMemory(width=width, depth=depth, copies=copies)
    errors = []

    async def bench(ctx):
        for clock, (write_en, write_addr, data, read_addr) in enumerate(steps):
            ctx.set(dut.write_en, -write_en)
            ctx.set(dut.write_addr, [write_addr] * copies)
            ctx.set(dut.write_data, data)
            ctx.set(dut.read_addr, [read_addr] * copies)
            await ctx.tick()
            read = clock + 1 - READ_LATENCY
            if read >= 0 and expected[read] is not None:
                got = ctx.get(dut.read_data)
                if got != expected[read]:
                    errors.append(f"read {read} of word {steps[read][3]}: {got:#x}, "
                                  f"expected {expected[read]:#x} ({copies} address copies)")

    simulate(dut, bench)
    assert not errors, "\n".join(errors[:10])


def _run_ecp5(tmp_path, dut, width, depth, copies, stimulus):
    """The lines a Verilog bench prints, running ``stimulus`` (statements on the ports
    ``write_en``, ``write_addr``, ``write_data``, ``read_addr``, which ``$display``
    ``read_data``) against ``dut``, an ECP5-form ``RegisteredMemory``, under Icarus Verilog
    with :data:`DP16KD_MODEL`."""
    bits = (depth - 1).bit_length()
    (tmp_path / "dut.v").write_text(component_verilog(dut, "dut"))
    (tmp_path / "model.v").write_text(_model())
    (tmp_path / "bench.v").write_text(f"""
module bench;
  reg clk = 0, rst = 0;
  reg [{copies - 1}:0] write_en = 0;
  reg [{copies * bits - 1}:0] write_addr = 0, read_addr = 0;
  reg [{width - 1}:0] write_data = 0;
  wire [{width - 1}:0] read_data;
  always #5 clk = ~clk;
  dut dut(.clk(clk), .rst(rst), .write_en(write_en), .write_addr(write_addr),
          .write_data(write_data), .read_addr(read_addr), .read_data(read_data));
  initial begin
    #2;
{stimulus}
    $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-o", "sim", "bench.v", "dut.v", "model.v"], cwd=tmp_path,
                   check=True)
    return subprocess.run(["vvp", "-n", "sim"], cwd=tmp_path, check=True, capture_output=True,
                          text=True).stdout.split()


@pytest.mark.parametrize("width,depth,copies", [(40, 256, 1), (36, 1024, 1), (100, 1024, 2)],
                         ids=["two_columns", "two_banks", "two_copies"])
def test_ecp5_form_against_a_model_of_the_block(tmp_path, width, depth, copies):
    """The ECP5 form as Icarus Verilog runs it with :data:`DP16KD_MODEL`: the same data as the
    reference, read for read, across block columns and banks, and with the columns cut
    between two copies of the addresses."""
    clocks = 600
    steps, expected = _traffic(7, width, depth, clocks)
    dut = RegisteredMemory(width=width, depth=depth, primitives="ecp5", copies=copies)
    bits = (depth - 1).bit_length()
    stimulus = "\n".join(
        f"    write_en = {{{copies}{{1'b{e}}}}}; write_addr = {{{copies}{{{bits}'d{a}}}}}; "
        f"write_data = {width}'h{d:x}; read_addr = {{{copies}{{{bits}'d{r}}}}}; "
        f"@(posedge clk); #1 $display(\"%h\", read_data);"
        for e, a, d, r in steps)
    lines = _run_ecp5(tmp_path, dut, width, depth, copies, stimulus)
    assert len(lines) == clocks, f"{len(lines)} lines of output, {clocks} expected"
    blocks = -(-width // ECP5_WIDTH) * -(-depth // ECP5_DEPTH)
    errors = []
    for clock, text in enumerate(lines):
        read = clock + 1 - READ_LATENCY
        if read < 0 or expected[read] is None:
            continue
        if "x" in text.lower() or int(text, 16) != expected[read]:
            errors.append(f"read {read} of word {steps[read][3]}: {text}, "
                          f"expected {expected[read]:#x} ({blocks} blocks)")
    assert not errors, "\n".join(errors[:10])


@pytest.mark.parametrize("kwargs,message", [
    ({"width": 0, "depth": 16}, "width must be a positive integer"),
    ({"width": 8, "depth": 1}, "depth must be an integer of at least 2"),
    ({"width": 8, "depth": 16, "primitives": "ice40"}, "primitives must be one of"),
    ({"width": 2 * ECP5_WIDTH, "depth": 16, "copies": 3},
     "copies must be an integer from 1 to the 2 block columns of a 72-bit word"),
    ({"width": 8, "depth": 16, "copies": 0}, "copies must be an integer from 1"),
])
def test_registered_memory_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RegisteredMemory(**kwargs)


#: Two writes and reads of three block columns with three copies of the addresses: a write
#: of all ones at a word (the same in every copy), enabled in some copies, then a read with an
#: address per copy (copy 0 first).
_COPY_STEPS = [(5, 0b010, [5, 5, 5]), (6, 0b111, [0, 0, 6])]


def _copy_steps_portable():
    """The data of each read of :data:`_COPY_STEPS`, from the portable form."""
    dut = RegisteredMemory(width=3 * ECP5_WIDTH, depth=16, copies=3)
    got = []

    async def bench(ctx):
        ctx.set(dut.write_data, -1)
        for word, enables, read_addresses in _COPY_STEPS:
            ctx.set(dut.write_addr, [word] * 3)
            ctx.set(dut.write_en, enables)
            await ctx.tick()
            ctx.set(dut.write_en, 0)
            ctx.set(dut.read_addr, read_addresses)
            await ctx.tick().repeat(READ_LATENCY)
            got.append(ctx.get(dut.read_data))

    simulate(dut, bench)
    return got


def _copy_steps_ecp5(tmp_path):
    """The data of each read of :data:`_COPY_STEPS`, from the ECP5 form under Icarus Verilog
    with :data:`DP16KD_MODEL`."""
    width = 3 * ECP5_WIDTH
    dut = RegisteredMemory(width=width, depth=16, copies=3, primitives="ecp5")
    copies = lambda values: "{" + ", ".join(f"4'd{v}" for v in reversed(values)) + "}"  # noqa: E731
    stimulus = "\n".join(
        f"    write_data = -1; write_addr = {copies([word] * 3)}; write_en = 3'b{enables:03b};"
        f" @(posedge clk); #1\n    write_en = 0; read_addr = {copies(reads)};"
        f" @(posedge clk); #1 @(posedge clk); #1 $display(\"%h\", read_data);"
        for word, enables, reads in _COPY_STEPS)
    lines = _run_ecp5(tmp_path, dut, width, 16, 3, stimulus)
    return [int(text, 16) if "x" not in text.lower() else text for text in lines]


@pytest.mark.parametrize("form", ["portable", "ecp5"])
def test_each_copy_of_the_addresses_reaches_its_group_of_columns_only(tmp_path, form):
    """Three block columns, three copies: a write enabled in copy 1 alone changes the middle
    column only, and a read at a word in copy 2 alone reads it in the last column only."""
    got = _copy_steps_portable() if form == "portable" else _copy_steps_ecp5(tmp_path)
    column = (1 << ECP5_WIDTH) - 1
    want = [column << ECP5_WIDTH, column << (2 * ECP5_WIDTH)]
    assert len(got) == len(want), f"{form} form: {len(got)} reads, expected {len(want)}"
    for what, value, expected in zip(("after a write in copy 1 alone",
                                      "a read at word 6 in copy 2 alone"), got, want):
        shown = f"{value:#x}" if isinstance(value, int) else value
        assert value == expected, \
            f"{form} form, {what}: {shown}, expected {expected:#x} (one column of ones)"


@pytest.mark.parametrize("width,ways", [(512, 4), (512, 6), (64, 5), (70, 1), (40, 36),
                                        (9, 3), (16, 19), (8, 40)])
def test_interleave_puts_each_bit_of_every_value_in_one_block_column(width, ways):
    """Each value's bit ``i`` is where the layout says; with at most a column's bits of
    values, in the same block column as bit ``i`` of every other value; ``unpack`` gives each
    value back; padding is 0; ``value_bits`` of a block column is exactly the bits it holds."""
    layout = Interleave(width=width, ways=ways)
    where = f"width {width}, ways {ways}"
    rng = np.random.default_rng(width * 100 + ways)
    values = [int.from_bytes(rng.bytes(-(-width // 8)), "little") % (1 << width)
              for _ in range(ways)]
    packed = layout.pack(Const(v, width) for v in values)
    assert len(packed) == layout.word_bits and layout.word_bits % ECP5_WIDTH == 0, \
        f"{where}: a word of {len(packed)} bits, word_bits {layout.word_bits} (whole columns)"
    word = Const.cast(packed).value
    placed, held = 0, {}
    for i in range(width):
        positions = [(i // layout.chunk) * layout.group_bits + v * layout.chunk + i % layout.chunk
                     for v in range(ways)]
        columns = {p // ECP5_WIDTH for p in positions}
        assert len(columns) == 1 or ways > ECP5_WIDTH, \
            f"{where}: bit {i} of the values in block columns {sorted(columns)}"
        for v, position in enumerate(positions):
            assert (word >> position) & 1 == (values[v] >> i) & 1, \
                f"{where}: bit {i} of value {v} not at word bit {position}"
            placed |= 1 << position
            held.setdefault(position // ECP5_WIDTH, set()).add(i)
    assert word & ~placed == 0, f"{where}: padding bits not 0"
    for column, bits in held.items():
        covered = layout.value_bits(slice(column * ECP5_WIDTH, (column + 1) * ECP5_WIDTH))
        want = slice(min(bits), max(bits) + 1)
        assert covered == want, f"{where}: value_bits of block column {column} is {covered}, " \
                                f"it holds bits {want.start} to {want.stop - 1}"
    for v in range(ways):
        got = Const.cast(layout.unpack(Const(word, layout.word_bits), v)).value
        assert got == values[v], f"{where}: value {v} unpacked as {got:#x}, packed " \
                                 f"{values[v]:#x}"


@pytest.mark.parametrize("kwargs,message", [
    ({"width": 0, "ways": 4}, "width must be a positive integer"),
    ({"width": 8, "ways": 0}, "ways must be a positive integer"),
])
def test_interleave_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Interleave(**kwargs)


@pytest.mark.parametrize("values", [[Const(0, 8)] * 2, [Const(0, 8), Const(0, 7), Const(0, 8)]])
def test_interleave_packs_only_its_values(values):
    with pytest.raises(ValueError, match="pack takes 3 values of 8 bits"):
        Interleave(width=8, ways=3).pack(values)
