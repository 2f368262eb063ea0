"""Golden model of region-configuration validation (``docs/spec.md`` section 8).

``CTRL.APPLY`` checks the staged regions in this order and reports the first fault: for each
enabled region ``i`` in index order, its own checks (mode, alignment, size, range, window,
threshold, capacity, accumulator alignment), then for each region ``j`` in index order the pair
checks (regions overlap; ``i``'s accumulators against ``j``'s addresses and ``j``'s
accumulators). :class:`hdl.control.ControlRegisters` walks the same order.
"""

from spec.params import Mode
from spec.regmap import ConfigError

__all__ = ["validate", "state_offset", "decode"]


def _overlap(a_start, a_end, b_start, b_end):
    return a_start < b_end and b_start < a_end


def validate(params, regions):
    """``(ConfigError, region index)`` of the first fault, or ``(ConfigError.NONE, 0)``."""
    line = params.datapath.line_bytes
    space = 1 << params.address_bits
    window = (params.window_base, params.window_base + params.window_bytes)

    def acc_range(r):
        return r.acc, r.acc + r.size // line * params.accumulator_bytes_per_line

    for i, r in enumerate(regions):
        if not r.enable:
            continue
        checks = [
            (r.mode not in (m.value for m in Mode), ConfigError.RESERVED_MODE),
            (r.base % line or r.size % line, ConfigError.MISALIGNED),
            (r.size == 0, ConfigError.ZERO_SIZE),
            (r.base + r.size > space, ConfigError.OUT_OF_RANGE),
            (_overlap(r.base, r.base + r.size, *window), ConfigError.COVERS_WINDOW),
            (r.mode == Mode.GTERNARY.value
             and not 1 <= r.threshold <= params.datapath.capacity, ConfigError.BAD_THRESHOLD),
            (r.aggregating and r.expected > params.datapath.capacity,
             ConfigError.OVER_CAPACITY),
            (r.aggregating and r.acc % params.accumulator_bytes_per_line,
             ConfigError.ACC_MISALIGNED),
            (r.aggregating and acc_range(r)[1] > space, ConfigError.OUT_OF_RANGE),
            (r.aggregating and _overlap(*acc_range(r), *window), ConfigError.ACC_OVERLAP),
        ]
        for failed, error in checks:
            if failed:
                return error, i
        for j, other in enumerate(regions):
            if not other.enable:
                continue
            if j != i and _overlap(r.base, r.base + r.size, other.base,
                                   other.base + other.size):
                return ConfigError.OVERLAP, i
            if r.aggregating and (
                    _overlap(*acc_range(r), other.base, other.base + other.size)
                    or (j != i and other.aggregating
                        and _overlap(*acc_range(r), *acc_range(other)))):
                return ConfigError.ACC_OVERLAP, i
    return ConfigError.NONE, 0


def state_offset(params, region):
    """The applied table's ``state_offset`` of ``region``: the accumulator of line address ``x``
    sits at ``x * accumulator_lines + state_offset`` modulo the address space."""
    return (region.acc - region.base * params.datapath.accumulator_lines) \
        % (1 << params.address_bits)


def decode(params, regions, enable, address):
    """``(window, region, mode, state_address)`` of a byte address, as
    :class:`hdl.decode.AddressDecoder` decodes it against an applied table."""
    if params.window_base <= address < params.window_base + params.window_bytes:
        return True, 0, Mode.IDENTITY.value, 0
    if enable:
        for index, r in enumerate(regions):
            if r.enable and r.base <= address < r.base + r.size:
                line = (address - r.base) // params.datapath.line_bytes
                state = (r.acc + line * params.accumulator_bytes_per_line) \
                    % (1 << params.address_bits)
                return False, index, r.mode, state
    return False, 0, Mode.IDENTITY.value, 0
