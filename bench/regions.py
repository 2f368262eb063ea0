"""Region tables for the control-register and decode tests (``verif/hdl/test_control.py``,
``verif/hdl/test_decode.py``, ``verif/hdl/test_controller_sim.py``), and the register writes
that program a table."""

from spec.params import REGISTER_BITS, ControllerParams, DatapathParams, Mode
from spec.regmap import Region

__all__ = ["PARAMS", "good_regions", "with_region", "region_writes"]

#: A small controller: 64-bit lines, four regions, a 1 MiB address space.
PARAMS = ControllerParams(datapath=DatapathParams(line_bits=64, counter_width=3),
                          regions=4, address_bits=20)

_WORD = (1 << REGISTER_BITS) - 1


def good_regions():
    """A table for :data:`PARAMS` that APPLY accepts: two aggregation regions and one identity
    region, accumulators high in memory, and a disabled fourth region."""
    return [
        Region(True, Mode.GBINARY.value, 0x0000, 0x400, 0x80000, 1, 7),
        Region(True, Mode.GTERNARY.value, 0x1000, 0x200, 0x90000, 3, 5),
        Region(True, Mode.IDENTITY.value, 0x2000, 0x100, 0, 1, 0),
        Region(False, Mode.GBINARY.value, 0x0000, 0x400, 0, 0, 0),
    ]


def with_region(index, **changes):
    """:func:`good_regions` with region ``index``'s fields ``changes`` changed."""
    regions = good_regions()
    regions[index] = Region(**{**regions[index].__dict__, **changes})
    return regions


def region_writes(regmap, regions):
    """``[(byte offset, word)]``: the writes of the ``R<r>_*`` registers of
    :class:`spec.regmap.RegisterMap` ``regmap`` that program ``regions`` (region ``r`` is
    ``regions[r]``), each word packed by its register's fields."""
    writes = []
    for r, region in enumerate(regions):
        for name, field, value in (("BASE", "ADDR", region.base), ("SIZE", "BYTES", region.size),
                                   ("ACC", "ADDR", region.acc)):
            writes += [(f"R{r}_{name}_LO", {field: value & _WORD}),
                       (f"R{r}_{name}_HI", {field: value >> REGISTER_BITS})]
        writes += [(f"R{r}_CFG", {"ENABLE": int(region.enable), "MODE": region.mode}),
                   (f"R{r}_AGG", {"THRESHOLD": region.threshold, "EXPECTED": region.expected})]
    return [(regmap[name].offset, regmap[name].pack(**fields)) for name, fields in writes]
