"""The responder's completion queue: it takes ``Responder.DEPTH`` completions while the host
takes no response, and no more, and then answers every one, in order, on its channel."""

from bench.sim import simulate
from hdl.responder import Responder, Source
from spec.params import ControllerParams


def test_completion_queue_fills_to_its_depth_and_loses_none():
    dut = Responder(ControllerParams())
    depth = Responder.DEPTH
    offered = depth + 4
    taken, answers, errors = [], [], []

    async def bench(ctx):
        ctx.set(dut.s2m_ndr.ready, 0)
        ctx.set(dut.s2m_drs.ready, 0)
        # Completions answered at once (NOW), one offered on every clock, DRS for odd tags.
        for _ in range(offered + 4):
            tag = len(taken)
            ctx.set(dut.completion.valid, tag < offered)
            ctx.set(dut.completion.payload.tag, tag)
            ctx.set(dut.completion.payload.data, tag & 1)
            ctx.set(dut.completion.payload.source, Source.NOW)
            if ctx.get(dut.completion.valid) and ctx.get(dut.completion.ready):
                taken.append(tag)
            await ctx.tick()
        ctx.set(dut.completion.valid, 0)
        ctx.set(dut.s2m_ndr.ready, 1)
        ctx.set(dut.s2m_drs.ready, 1)
        for clock in range(2 * depth + 8):
            ndr = ctx.get(dut.s2m_ndr.valid)
            drs = ctx.get(dut.s2m_drs.valid)
            if ndr and drs:
                errors.append(f"clock {clock}: an NDR and a DRS on one clock")
            if ndr or drs:
                channel = dut.s2m_drs if drs else dut.s2m_ndr
                answers.append((ctx.get(channel.payload.tag), "DRS" if drs else "NDR"))
            await ctx.tick()

    simulate(dut, bench)
    assert not errors, "\n".join(errors)
    assert taken == list(range(depth)), \
        f"the queue took {len(taken)} completions with the host taking none, expected {depth}"
    expected = [(tag, "DRS" if tag & 1 else "NDR") for tag in taken]
    assert answers == expected, \
        f"answers (tag, channel) {answers}, expected {expected}"
