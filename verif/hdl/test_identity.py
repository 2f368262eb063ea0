"""The identity path alone (:class:`hdl.identity.IdentityPath`): random host reads and writes
from dispatch, a memory port that takes commands and returns lines (among the pool's) at
random, a responder that takes lines at random, and a clear's zero writes in between; every
command, line and write must come out once, in order, unchanged, and reads in flight must
never exceed ``READS_IN_FLIGHT``."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.axi import AxiMemoryPort
from hdl.identity import IdentityPath
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64), address_bits=16, axi_id_bits=2)
HOST, POOL = 0, 1
SEED = 58
CLOCKS = 3000


def test_reads_come_back_in_order_and_bounded():
    dut = IdentityPath(PARAMS, host_id=HOST)
    rng = np.random.default_rng(SEED)
    sent, commands, lines = [], [], []

    async def testbench(ctx):
        returning = []                      # (due clock, id, data, error)
        in_flight = 0
        for clock in range(CLOCKS):
            offer = bool(rng.random() < 0.5)
            address = int(rng.integers(0, 1 << 10)) * 8
            ctx.set(dut.read.valid, offer and ctx.get(dut.read_room))
            ctx.set(dut.read.payload, {"id": HOST, "address": address, "beats": 1})
            taken_read = offer and ctx.get(dut.read_room) and ctx.get(dut.read.ready)
            ctx.set(dut.read_command.ready, bool(rng.random() < 0.6))
            ctx.set(dut.lines.ready, bool(rng.random() < 0.5))
            if ctx.get(dut.read_command.valid) and ctx.get(dut.read_command.ready):
                command = ctx.get(dut.read_command.payload)
                commands.append(command.address)
                returning.append((clock + int(rng.integers(2, 6)), HOST,
                                  int(rng.integers(0, 1 << 62)) * 3, int(rng.random() < 0.1)))
            if rng.random() < 0.2:          # a pool line among the host's
                returning.append((clock + 1, POOL, 0xDEAD, 0))
            returning.sort(key=lambda line: line[0])
            due = bool(returning) and returning[0][0] <= clock
            line = returning.pop(0) if due else (0, HOST, 0, 0)
            ctx.set(dut.read_data.valid, due)
            ctx.set(dut.read_data.payload, {"id": line[1], "data": line[2], "error": line[3]})
            if due and line[1] == HOST:
                sent.append((line[2], line[3]))
            if ctx.get(dut.lines.valid) and ctx.get(dut.lines.ready):
                got = ctx.get(dut.lines.payload)
                lines.append((got.data, got.error))
                in_flight -= 1
            if taken_read:
                in_flight += 1
                commands_wanted.append(address)
            assert in_flight <= IdentityPath.READS_IN_FLIGHT, \
                f"seed {SEED}, clock {clock}: {in_flight} reads in flight"
            await ctx.tick()

    commands_wanted = []
    simulate(dut, testbench)
    assert commands == commands_wanted[:len(commands)], f"seed {SEED}: read commands out of order"
    assert len(commands) > 100, f"seed {SEED}: only {len(commands)} reads went out"
    assert lines == sent[:len(lines)], f"seed {SEED}: lines differ from the memory's, in order"


@pytest.mark.parametrize("line_lag", [0, 1])
def test_writes_in_order_with_zero_writes_between(line_lag):
    """Host writes come out in order, unchanged, each line and its byte enables a clock after
    the take (the memory port's ``LINE_LAG``), whether dispatch gives them with the write or
    ``line_lag`` clocks after it; zero writes only in the zero phase."""
    assert AxiMemoryPort.LINE_LAG == 1, "the test reads a write's line a clock after its take"
    dut = IdentityPath(PARAMS, host_id=HOST, line_lag=line_lag)
    rng = np.random.default_rng(SEED)
    offered, written = [], []

    async def testbench(ctx):
        zero_phase = zeroing = False        # the phase, and its copy a clock late
        taken_writes = {}                   # clock: the host write taken on it
        for clock in range(CLOCKS):
            if clock % 300 == 0:
                zero_phase = not zero_phase and clock > 0
            ctx.set(dut.zero_phase, zero_phase)
            write = {"address": int(rng.integers(0, 1 << 10)) * 8,
                     "line": int(rng.integers(0, 1 << 62)) * 3, "strobe": int(rng.integers(256))}
            offer = bool(rng.random() < 0.5)
            ctx.set(dut.write.valid, offer)
            # The line and byte enables of the write taken ``line_lag`` clocks before, random
            # bits when none was.
            junk = {"line": int(rng.integers(0, 1 << 62)), "strobe": int(rng.integers(256))}
            late = write if not line_lag else taken_writes.get(clock - line_lag, junk)
            ctx.set(dut.write.payload, {"address": write["address"], "line": late["line"],
                                        "strobe": late["strobe"]})
            if offer and ctx.get(dut.write.ready):
                taken_writes[clock] = write
                offered.append(("host", write["address"], write["line"], write["strobe"]))
            zero = {"id": POOL, "address": 0x8000 + clock * 8, "line": 0, "strobe": 0xFF}
            ctx.set(dut.zero_write.valid, zeroing)
            ctx.set(dut.zero_write.payload, zero)
            ctx.set(dut.write_line.ready, bool(rng.random() < 0.5))
            taken = None
            if ctx.get(dut.write_line.valid) and ctx.get(dut.write_line.ready):
                got = ctx.get(dut.write_line.payload)
                source = "zero" if got.id == POOL else "host"
                assert source == ("zero" if zeroing else "host"), \
                    f"seed {SEED}, clock {clock}: a {source} write while zeroing is {zeroing}"
                taken = (source, got.address)
                if source == "zero":
                    assert ctx.get(dut.zero_write.ready), f"clock {clock}: zero write not taken"
            await ctx.tick()
            zeroing = zero_phase
            if taken is not None:       # the line and its byte enables, LINE_LAG clocks late
                late = ctx.get(dut.write_line.payload)
                if taken[0] == "host":
                    written.append((*taken, late.line, late.strobe))
                else:
                    assert (late.line, late.strobe) == (0, 0xFF), \
                        f"seed {SEED}, clock {clock}: zero write's line {late.line:#x}, " \
                        f"strobe {late.strobe:#x}"

    simulate(dut, testbench)
    assert written == offered[:len(written)], \
        f"seed {SEED}, line lag {line_lag}: host writes differ or reordered"
    assert len(written) > 500, f"seed {SEED}: only {len(written)} host writes went out"


def test_line_lag_beyond_the_ports_is_refused():
    for bad in (-1, AxiMemoryPort.LINE_LAG + 1, "1"):
        with pytest.raises(ValueError, match=r"line_lag must be an integer from 0 to "
                                             rf"{AxiMemoryPort.LINE_LAG} \(the memory port's "
                                             r"LINE_LAG\), not"):
            IdentityPath(PARAMS, host_id=HOST, line_lag=bad)
