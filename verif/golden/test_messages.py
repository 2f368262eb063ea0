"""The golden device at its CXL.mem channels (:mod:`golden.messages`), its batches of requests
(:meth:`golden.device.DeviceModel.read_lines`) and failing device memory: every bad input of
``docs/spec.md`` section 10 gets its answer, and requests served in batches are answered as
when served one at a time."""

import numpy as np
import pytest

from bench.regions import PARAMS, good_regions
from golden.device import DeviceModel
from golden.messages import DRS, NDR, NONE, REQ, RWD, MessageModel, Requests
from spec.cxl import DRSOpcode, NDROpcode, ReqOpcode, RwDOpcode
from spec.params import Mode, Reason

LINE = PARAMS.datapath.line_bytes
REGIONS = good_regions()
GB, GT, IDENT = REGIONS[:3]
#: A failing identity line and a G-Binary line whose accumulator fails.
FAILING_LINE = 0x4000
FAULTS = [(FAILING_LINE, FAILING_LINE + LINE), (GB.acc, GB.acc + PARAMS.accumulator_bytes_per_line)]


def _requests(*rows):
    """Requests from ``(channel, opcode, address[, data[, enables[, poison]]])`` rows."""
    count = len(rows)
    out = Requests(channel=np.zeros(count, np.uint8), opcode=np.zeros(count, np.uint8),
                   address=np.zeros(count, dtype=object), data=np.zeros((count, LINE), np.uint8),
                   byte_enable=np.ones((count, LINE), bool), poison=np.zeros(count, bool))
    for i, (channel, opcode, address, *rest) in enumerate(rows):
        out.channel[i], out.opcode[i], out.address[i] = channel, getattr(opcode, "value", opcode), \
            address
        if rest:
            out.data[i] = rest[0]
        if len(rest) > 1:
            out.byte_enable[i] = rest[1]
        if len(rest) > 2:
            out.poison[i] = rest[2]
    return out


def _model(faults=()):
    model = MessageModel(PARAMS, faults=faults)
    model.transport.device.regions = REGIONS
    model.transport.device.enable = True
    return model


def _status(model):
    status = model.transport.regmap["STATUS"]
    return status.unpack(model.transport._read_register(status.offset))


def test_bad_opcodes_are_completed_without_effect_and_flagged():
    model = _model()
    answers = model.serve(_requests(
        (REQ, ReqOpcode.MEM_RD_FWD, IDENT.base), (REQ, ReqOpcode.MEM_WR_FWD, IDENT.base),
        (REQ, 0b0101, IDENT.base), (RWD, 0b0000, IDENT.base, np.full(LINE, 7)),
        (REQ, ReqOpcode.MEM_SPEC_RD, IDENT.base), (REQ, ReqOpcode.MEM_INV, IDENT.base),
        (REQ, ReqOpcode.MEM_RD, IDENT.base)))
    assert answers.channel.tolist() == [NDR, NDR, NDR, NDR, NONE, NDR, DRS], answers.channel
    assert set(answers.opcode[:4].tolist()) == {NDROpcode.CMP.value}, answers.opcode
    assert not answers.data[6].any(), f"a reserved RwD opcode wrote {answers.data[6]}"
    assert _status(model)["BAD_OPCODE"], "STATUS.BAD_OPCODE not set"


def test_requests_beyond_the_address_space_and_poison():
    model = _model()
    beyond = 1 << PARAMS.address_bits
    ones = np.full(LINE, 0xFF)
    answers = model.serve(_requests(
        (REQ, ReqOpcode.MEM_RD, beyond), (RWD, RwDOpcode.MEM_WR, beyond, ones),
        (RWD, RwDOpcode.MEM_WR, IDENT.base, ones, np.ones(LINE, bool), True),
        (RWD, RwDOpcode.MEM_WR, GB.base, ones, np.ones(LINE, bool), True),
        (REQ, ReqOpcode.MEM_RD, IDENT.base)))
    assert (answers.channel[0], answers.opcode[0]) == (DRS, DRSOpcode.MEM_DATA_NXM.value)
    assert answers.channel[1:4].tolist() == [NDR] * 3, answers.channel
    assert not answers.data[4].any(), "a poisoned write changed memory"
    status = _status(model)
    assert status["BAD_ADDRESS"] and status["POISON"], status
    assert model.transport.device.events["accepted"] == 0, "a poisoned contribution counted"


def test_memwr_writes_the_whole_line_and_memwrptl_its_enabled_bytes():
    model = _model()
    half = np.arange(LINE) < LINE // 2
    data = np.arange(1, LINE + 1, dtype=np.uint8)
    answers = model.serve(_requests(
        (RWD, RwDOpcode.MEM_WR, IDENT.base, data, half),
        (RWD, RwDOpcode.MEM_WR_PTL, IDENT.base + LINE, data, half),
        (REQ, ReqOpcode.MEM_RD, IDENT.base), (REQ, ReqOpcode.MEM_RD, IDENT.base + LINE)))
    assert (answers.data[2] == data).all(), f"MemWr wrote {answers.data[2]}"
    assert (answers.data[3] == np.where(half, data, 0)).all(), f"MemWrPtl wrote {answers.data[3]}"


def test_failing_memory_poisons_reads_and_applies_nothing():
    model = _model(FAULTS)
    ones = np.full(LINE, 0xFF)
    answers = model.serve(_requests(
        (RWD, RwDOpcode.MEM_WR, FAILING_LINE, ones), (REQ, ReqOpcode.MEM_RD, FAILING_LINE),
        (RWD, RwDOpcode.MEM_WR, GB.base, ones), (REQ, ReqOpcode.MEM_RD, GB.base),
        (RWD, RwDOpcode.MEM_WR, GB.base + LINE, ones), (REQ, ReqOpcode.MEM_RD, GB.base + LINE)))
    assert answers.poison.tolist() == [False, True, False, True, False, False], answers.poison
    assert not answers.defined[1].any() and not answers.data[3].any(), \
        "a failed read has defined data"
    events = model.transport.device.events
    assert (events["accepted"], events["rejected"]) == (1, 0), \
        f"the contribution to a failing accumulator counted: {events}"
    assert _status(model)["MEM_ERROR"], "STATUS.MEM_ERROR not set"
    before = events["mem_error"]
    model.transport.device.clear(0)
    assert events["mem_error"] == before + 1, "a clear of a failing accumulator did not fail"


def test_a_batch_of_requests_to_the_same_line_is_refused():
    device = DeviceModel(PARAMS, REGIONS)
    with pytest.raises(ValueError, match="touch the line or accumulator of 0x0 twice"):
        device.write_lines([GB.base, GB.base], np.zeros((2, LINE), np.uint8))


def test_batches_answer_as_requests_one_at_a_time():
    """Random requests over a few lines of every path: served by the model in whatever
    batches it forms, and one request per call, the answers and the memory agree."""
    rng = np.random.default_rng(5)
    lines = [r.base + k * LINE for r in (GB, GT, IDENT) for k in range(4)]
    # Raw accesses of the accumulators of those lines (a checkpoint's reads and restores).
    lines += [r.acc + k * PARAMS.accumulator_bytes_per_line + j * LINE for r in (GB, GT)
              for k in range(4) for j in range(1 + PARAMS.datapath.state_lines)]
    rows = []
    for _ in range(300):
        address = int(rng.choice(lines))
        if rng.random() < 0.4:
            rows.append((REQ, ReqOpcode.MEM_RD, address))
        else:
            rows.append((RWD, RwDOpcode.MEM_WR_PTL, address, rng.integers(0, 256, LINE),
                         rng.random(LINE) < 0.95))
    together, alone = _model(), _model()
    batched = together.serve(_requests(*rows))
    for i, row in enumerate(rows):
        single = alone.serve(_requests(row))
        for name in ("channel", "opcode", "poison", "data"):
            assert (getattr(single, name)[0] == getattr(batched, name)[i]).all(), \
                f"request {i} ({row[:3]}): {name} differs between batch and single"
    assert together.transport.device.events == alone.transport.device.events
    memory, other = together.transport.device.memory, alone.transport.device.memory
    assert memory.keys() == other.keys() and all((memory[a] == other[a]).all() for a in other)


def test_the_driver_view_is_unchanged_by_batches():
    """DeviceModel.write and read are one-request batches: a contribution and its result."""
    device = DeviceModel(PARAMS, REGIONS)
    assert device.write(GB.base, np.full(LINE, 0xFF, np.uint8)) == Reason.NONE
    data, nxm = device.read(GB.base)
    assert not nxm and (data == 0xFF).all(), f"result line {data}"
    assert device.write(GB.base, np.zeros(LINE, np.uint8), np.arange(LINE) > 0) \
        == Reason.PARTIAL
    assert Mode(device.mode(GT.base)) == Mode.GTERNARY


def _register_line(model, name):
    register = model.transport.regmap[name]
    return PARAMS.window_base + register.offset - register.offset % LINE, register.offset % LINE


def test_sends_count_each_poll_of_a_register_as_a_read():
    model = _model()
    line, byte = _register_line(model, "CNT_READS")
    answers = model.serve(_requests((REQ, ReqOpcode.MEM_RD, line)), sends=[3])
    assert int.from_bytes(answers.data[0][byte:byte + 4].tobytes(), "little") == 2, \
        "the third read of CNT_READS must see the two before it, not itself"


def test_counters_of_the_slot_pool_are_not_defined_by_the_model():
    model = _model()
    line, byte = _register_line(model, "CNT_HITS")
    answers = model.serve(_requests((REQ, ReqOpcode.MEM_RD, line)))
    assert not answers.defined[0][byte:byte + 4].any(), "CNT_HITS is not kept by the model"
    assert answers.defined[0].sum() < LINE, answers.defined[0]
