"""The ``amaranth.sim`` helpers of the tests, in one place: running a simulation
(:func:`simulate`), stream handshakes (:func:`send`, :func:`receive`) and accesses on the plain
CSR bus of :mod:`hdl.csr` (:func:`bus_read`, :func:`bus_write`, :func:`bus_reads`, and by
register name and field through a :class:`spec.regmap.RegisterMap`: :func:`read_fields`,
:func:`write_fields`).

``WAVES=1`` in the environment makes :func:`simulate` write a VCD file of every signal to
``build/sim/amaranth/<name>.vcd`` (``<name>``: the running pytest test unless given).
"""

import os
import re
from pathlib import Path

from amaranth.sim import Simulator

from hdl.csr import READ_LATENCY, WRITE_LATENCY
from spec.regmap import REGISTER_BYTES

__all__ = ["WAVES_DIR", "DEADLINE", "simulate", "send", "receive", "bus_read", "bus_write",
           "bus_reads", "read_fields", "write_fields"]

#: Where ``WAVES=1`` puts the VCD files of :func:`simulate`.
WAVES_DIR = Path(__file__).resolve().parent.parent / "build" / "sim" / "amaranth"


_waves_written = {}       # VCD name: simulations that wrote it in this process


def _waves_name():
    """The running pytest test (``PYTEST_CURRENT_TEST``, ``test_x.test_y[params]`` as
    ``test_x.test_y_params``) as a file name, else ``simulation``; a test's second simulation
    gets ``-2``, and so on."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "simulation").rsplit(" ", 1)[0]
    test = test.split("/")[-1].replace(".py::", ".")
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", test).strip("_") or "simulation"
    _waves_written[name] = count = _waves_written.get(name, 0) + 1
    return name if count == 1 else f"{name}-{count}"


#: Clocks after which :func:`simulate` gives up on testbenches that have not returned.
DEADLINE = 1_000_000


def simulate(dut, *testbenches, processes=(), clock=1e-8, until=None, name=None,
             deadline=DEADLINE):
    """Simulate ``dut`` with ``testbenches`` (``add_testbench``, in order) and ``processes``
    (``add_process``, in order; the simulator runs processes before testbenches in any case).

    ``clock`` is the period in seconds of the ``sync`` clock (``None``: no clock, for designs
    without one). Runs until ``until`` seconds when given (``run_until``), else until the
    testbenches return (``run``). A clocked simulation whose testbenches have not returned
    after ``deadline`` clocks raises ``AssertionError`` (a handshake that never completes
    fails its test rather than hanging it). With ``WAVES=1`` in the environment, writes
    ``WAVES_DIR/<name>.vcd`` (``name`` defaults to the running pytest test)."""
    sim = Simulator(dut)
    if clock is not None:
        sim.add_clock(clock)

        async def watchdog(ctx):
            await ctx.delay(deadline * clock)
            raise AssertionError(f"the testbenches had not returned after {deadline} clocks: "
                                 f"a handshake that never completes? (raise simulate's "
                                 f"deadline for a longer test)")

        sim.add_testbench(watchdog, background=True)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    for process in processes:
        sim.add_process(process)

    def run():
        if until is None:
            sim.run()
        else:
            sim.run_until(until)

    if os.environ.get("WAVES", "0") in ("", "0"):
        run()
        return
    WAVES_DIR.mkdir(parents=True, exist_ok=True)
    with sim.write_vcd(str(WAVES_DIR / f"{name or _waves_name()}.vcd")):
        run()


async def send(ctx, channel, **fields):
    """Drive ``channel.payload``'s ``fields`` with ``valid`` until the clock edge that takes
    them (``ready`` high); returns in the clock after it, ``valid`` low again."""
    for name, value in fields.items():
        ctx.set(getattr(channel.payload, name), value)
    ctx.set(channel.valid, 1)
    await ctx.tick().until(channel.ready)
    ctx.set(channel.valid, 0)


async def receive(ctx, channel):
    """Hold ``channel.ready`` high until a payload is taken; returns that payload."""
    ctx.set(channel.ready, 1)
    payload, = await ctx.tick().sample(channel.payload).until(channel.valid)
    ctx.set(channel.ready, 0)
    return payload


def _word_address(offset):
    if offset % REGISTER_BYTES:
        raise ValueError(f"register offset {offset:#x} is not {REGISTER_BYTES}-byte aligned")
    return offset // REGISTER_BYTES


async def bus_write(ctx, bus, offset, data, *, wait=True):
    """Write ``data`` to the register at byte ``offset`` on the CSR bus ``bus``
    (:func:`hdl.csr.csr_bus_signature`): one clock of ``w_stb``, then ``WRITE_LATENCY - 1``
    clocks more, so that the write has taken effect when it returns (a ``WS`` field pulses in
    the clock it returns in). With ``wait=False`` it returns after the strobe's clock, for
    tests that time something against the write."""
    ctx.set(bus.addr, _word_address(offset))
    ctx.set(bus.w_data, data)
    ctx.set(bus.w_stb, 1)
    await ctx.tick()
    ctx.set(bus.w_stb, 0)
    if wait:
        await ctx.tick().repeat(WRITE_LATENCY - 1)


async def bus_read(ctx, bus, offset):
    """Read the register at byte ``offset`` on the CSR bus ``bus``: one clock of ``r_stb``,
    then ``r_data`` ``READ_LATENCY`` clocks after the strobe."""
    ctx.set(bus.addr, _word_address(offset))
    ctx.set(bus.r_stb, 1)
    await ctx.tick()
    ctx.set(bus.r_stb, 0)
    await ctx.tick().repeat(READ_LATENCY - 1)
    return ctx.get(bus.r_data)


async def bus_reads(ctx, bus, offsets):
    """Read the registers at byte ``offsets`` back to back, one read strobe per clock;
    returns their words in order (the last ``READ_LATENCY`` clocks after its strobe). Each
    word is the register's value in consecutive clocks when ``offsets`` repeats one offset."""
    offsets = list(offsets)
    words = []
    for clock in range(len(offsets) + READ_LATENCY - 1):
        if clock < len(offsets):
            ctx.set(bus.addr, _word_address(offsets[clock]))
        ctx.set(bus.r_stb, clock < len(offsets))
        await ctx.tick()
        if clock + 1 >= READ_LATENCY:
            words.append(ctx.get(bus.r_data))
    return words


async def read_fields(ctx, bus, regmap, name):
    """``{field: value}`` of register ``name`` of :class:`spec.regmap.RegisterMap` ``regmap``,
    read with :func:`bus_read`."""
    register = regmap[name]
    return register.unpack(await bus_read(ctx, bus, register.offset))


async def write_fields(ctx, bus, regmap, name, *, wait=True, **fields):
    """Write register ``name`` of ``regmap`` with :func:`bus_write`: the named ``fields`` at
    their values, every other field 0 (:meth:`spec.regmap.Register.pack`)."""
    register = regmap[name]
    await bus_write(ctx, bus, register.offset, register.pack(**fields), wait=wait)
