"""Stream handshakes for ``amaranth.sim`` testbenches: one payload in, one payload out."""

__all__ = ["send", "receive"]


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
