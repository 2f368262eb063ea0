"""What the slot pool's ops, slots, results, fills and write-backs look like, and the lane
arithmetic its components share (:mod:`hdl.slots` describes the pool)."""

import dataclasses

from amaranth import Cat, Mux, Signal, Value, unsigned
from amaranth.lib import data, enum

from spec.params import TERNARY_INVALID, Mode, Reason

from .datapath import state_layout

__all__ = ["SlotOp", "slot_op_layout", "slot_entry_layout", "slot_result_layout",
           "write_back_layout", "slice_write_back_layout", "slice_params", "fill_command_layout",
           "fill_line_layout", "pool_fill_layout", "SLOT_EVENTS", "slot_event_layout",
           "accumulate", "lane_groups", "by_group", "invalid_codes", "is_scan", "unit_settings",
           "side_layout"]


class SlotOp(enum.Enum, shape=3):
    """What an op asks of the pool."""
    CONTRIBUTE = 0   # add ``data`` to the line ``tag`` (result: accept status)
    READ = 1         # the line's result line (result: ``line``)
    FLUSH = 2        # slot ``index``: write it back if dirty; it stays resident, clean
    EVICT = 3        # slot ``index``: write it back if dirty, and empty it
    CLEAR = 4        # slot ``index``: empty it, without write-back, if its line is in
    #                  ``[tag, clear_high)`` (:class:`hdl.slots.SlotPool`)
    DROP = 5         # slot ``index``: empty it (the pool's own scan after reset)


def slot_op_layout(params, user_width):
    """An op. ``tag`` is the byte address of the line's accumulator (for ``CLEAR``, the first
    accumulator byte of the range ``[tag, clear_high)``, whose end is a pool input held while
    a clear runs: :class:`hdl.slots.SlotPool`); ``index`` the slot the controller chose,
    the same for every op on a line. Two lines given the same slot must differ in ``tag`` at
    or above bit ``log2(accumulator_bytes_per_line * slots)``: the hit check compares no
    lower bit. The controller's do: it takes the index from the tag's bits just above the
    accumulator, which is aligned to its size."""
    p = params.datapath
    return data.StructLayout({
        "kind": SlotOp,
        "index": unsigned(params.slot_index_bits),
        "tag": unsigned(params.address_bits),
        "data": unsigned(p.line_bits),
        "full_line": 1,
        "mode": Mode,
        "threshold": unsigned(p.counter_width),
        "expected": unsigned(p.counter_width),
        "user": unsigned(user_width),
    })


def slot_entry_layout(params):
    """One slot: what the pool's memory holds per word."""
    p = params.datapath
    return data.StructLayout({
        "valid": 1,
        "dirty": 1,
        "tag": unsigned(params.address_bits),
        "mode": Mode,
        "threshold": unsigned(p.counter_width),
        "state": state_layout(p),
    })


def slot_result_layout(params, user_width):
    """The answer to a ``CONTRIBUTE`` or ``READ``: the accept status (``reason``, ``invalid``
    as the datapath gives them), the result line of a read, and ``error`` when device memory
    answered the fill or result read with an error (nothing changed; a read's line is 0)."""
    return data.StructLayout({
        "user": unsigned(user_width),
        "line": unsigned(params.datapath.line_bits),
        "accepted": 1,
        "reason": Reason,
        "invalid": 1,
        "error": 1,
    })


def write_back_layout(params):
    """A line's accumulator image for device memory, to write from ``address`` on: the result
    line, then the state's ``state_lines`` lines."""
    p = params.datapath
    return data.StructLayout({
        "address": unsigned(params.address_bits),
        "lines": unsigned((1 + p.state_lines) * p.line_bits),
    })


def slice_write_back_layout(params):
    """A write-back as a slice of the pool makes it (:class:`PoolSlice`; ``params`` with its
    ``line_bits``): the result line and the state's bit planes in the slice's columns
    (:func:`hdl.datapath.planes_of_state`), and the count (``n``), which the ``n`` line holds
    alone."""
    p = params.datapath
    return data.StructLayout({
        "address": unsigned(params.address_bits),
        "lines": unsigned((1 + p.counter_width) * p.line_bits),
        "n": unsigned(p.counter_width),
    })


def slice_params(params, line_bits):
    """``params`` with a datapath of ``line_bits``: the widths of a slice of the pool."""
    return dataclasses.replace(params, datapath=dataclasses.replace(params.datapath,
                                                                   line_bits=line_bits))


def fill_command_layout(params):
    """A read of ``beats`` consecutive lines of device memory from byte ``address``."""
    return data.StructLayout({"address": unsigned(params.address_bits),
                              "beats": unsigned(params.datapath.counter_width.bit_length())})


def fill_line_layout(lanes):
    """A line of a fill as a slice of the pool takes it (:class:`FillReader`): the slice's
    ``lanes.line_bits`` columns of the line (``data``), the line's first ``W`` bits, which
    are the count in a state's ``n`` line (``n``), and whether memory answered with an error
    (both are 0 then)."""
    return data.StructLayout({"data": lanes.line_bits, "n": lanes.counter_width, "error": 1})


def pool_fill_layout(params, slices):
    """A line of a fill or result read as the pool takes it, on the clock it arrives: the
    line (``data``, 0 with an error), and whether it arrives (``valid``) and came with an
    error (``error``) once per slice, all alike, each copy a register of its own, so that
    every slice's reader is steered from beside it (pipeline rule 2)."""
    return data.StructLayout({"data": params.datapath.line_bits, "valid": slices,
                              "error": slices})


#: What the pool reports, one strobe each per clock at most.
SLOT_EVENTS = ("accepted", "rejected", "capacity", "partial", "invalid", "completed", "hits",
               "fills", "evictions", "write_backs", "mem_error", "dropped")


def slot_event_layout():
    return data.StructLayout({name: 1 for name in SLOT_EVENTS})


def accumulate(params, lanes, line, ternary):
    """The lanes after adding contribution ``line`` (combinational): G-Binary adds line bit
    ``k`` to the ``W``-bit count of lane ``k``; G-Ternary (``ternary``) adds lane ``k``'s code
    (``01`` +1, ``11`` -1, ``00`` and the invalid ``10`` 0) to its ``2W``-bit sum, which sits
    where G-Binary lanes ``2k`` and ``2k + 1`` do. ``line`` may be any even number of a line's
    bits, and ``lanes`` their lanes.

    One ``2W + 1``-bit adder per lane pair serves both modes: a bit between the two halves
    kills the carry out of the low half in G-Binary (0 in both operands) and passes it on in
    G-Ternary (1 in one of them), so one carry chain does the work of the two counts' adders,
    the sum's and the mode's select."""
    width = params.counter_width
    count = len(line) // 2
    pairs = data.ArrayLayout(unsigned(2 * width), count)(lanes)
    out = []
    for k in range(count):
        low, high = line[2 * k], line[2 * k + 1]
        minus = ternary & low & high       # G-Ternary -1: all ones, sign-extended
        augend = Cat(pairs[k][:width], ternary, pairs[k][width:])
        addend = Cat(low, minus.replicate(width - 1), 0, Mux(ternary, minus, high),
                     minus.replicate(width - 1))
        total = (augend + addend)[:2 * width + 1]
        out.append(Cat(total[:width], total[width + 1:]))
    return Cat(out)


def lane_groups(params, value, size=None):
    """``value`` cut into the column groups of pipeline rule 2, each ``size`` bits (by default
    the lanes of ``control_copy_bits`` line bits: a state's lanes are cut into groups)."""
    size = params.control_copy_bits * params.counter_width if size is None else size
    return [value[k * size:(k + 1) * size] for k in range(params.control_copies)]


def by_group(m, params, layout, selects, if_one, if_zero, name):
    """A signal ``name`` of ``layout`` (:func:`slot_entry_layout`): ``if_one`` where the
    select that steers a bit is 1, ``if_zero`` elsewhere. ``selects`` are copies of one select
    (:func:`hdl.pipeline.register_copies`): copy ``k`` steers column group ``k`` of the
    state's lanes, the last copy every other field. One ``Cat`` of ``Mux`` es, a continuous
    assignment (module docstring, Icarus), into a signal: Amaranth's simulator would repeat
    the whole expression for each slice that reads it."""
    one, zero = Value.cast(if_one), Value.cast(if_zero)
    start = layout["state"].offset + state_layout(params)["lanes"].offset
    end = start + params.state_lanes_bits
    rest = selects[-1]
    out = Signal(layout, name=name)
    m.d.comb += out.eq(Cat(Mux(rest, one[:start], zero[:start]),
                           *(Mux(select, a, b) for select, a, b in zip(
                               selects, lane_groups(params, one[start:end]),
                               lane_groups(params, zero[start:end]))),
                           Mux(rest, one[end:], zero[end:])))
    return out


def invalid_codes(params, line):
    """Whether ``line`` holds a G-Ternary lane with the invalid code ``10``."""
    return Cat(line[2 * k:2 * k + 2] == TERNARY_INVALID
               for k in range(params.gternary_lanes)).any()


def is_scan(kind):
    """Whether an op of ``kind`` names a slot (a scan) rather than a line."""
    return (kind != SlotOp.CONTRIBUTE) & (kind != SlotOp.READ)


def unit_settings(scan, op, mode, threshold):
    """The mode and threshold the result unit makes ``op``'s result line with: the op's own,
    or, for a scan (``scan``: it writes back what the slot keeps), ``mode`` and
    ``threshold``, the slot word's."""
    return Mux(scan, mode, op.mode), Mux(scan, threshold, op.threshold)


def side_layout(params, user_width):
    """What travels beside a state through the result unit."""
    return data.StructLayout({
        "result": 1,            # answers a CONTRIBUTE or READ
        "write_back": 1,
        "address": unsigned(params.address_bits),
        "user": unsigned(user_width),
        "accepted": 1,
        "reason": Reason,
        "invalid": 1,
    })
