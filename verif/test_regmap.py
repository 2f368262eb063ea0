"""The register map description and the three artefacts generated from it."""

import runpy
import subprocess

import pytest

from hdl.generate import write_register_map
from hdl.params import DatapathParams
from hdl.regmap import (ID_MAGIC, REGION_BASE, REGION_STRIDE, Field, Register, RegisterMap,
                        register_map)

PARAMS = DatapathParams(line_bits=128, counter_width=5, latency=2)


def field_value(regmap, reg, name):
    f = regmap[reg].field(name)
    return (regmap[reg].reset & f.mask) >> f.offset


def test_capabilities_come_from_the_parameters():
    regmap = register_map(PARAMS, regions=12)
    assert field_value(regmap, "ID", "MAGIC") == ID_MAGIC
    assert field_value(regmap, "CAP_LINE", "LINE_BITS") == 128
    assert field_value(regmap, "CAP_LINE", "COUNTER_WIDTH") == 5
    assert field_value(regmap, "CAP_LINE", "LATENCY") == 2
    assert field_value(regmap, "CAP_LANES", "GBINARY") == PARAMS.gbinary_lanes
    assert field_value(regmap, "CAP_LANES", "GTERNARY") == PARAMS.gternary_lanes
    assert field_value(regmap, "CAP_LIMITS", "CAPACITY") == 31
    assert field_value(regmap, "CAP_LIMITS", "REGIONS") == 12
    assert field_value(regmap, "CAP_LIMITS", "STATE_LINES") == PARAMS.state_lines


def test_region_descriptors_repeat_at_the_stride():
    regmap = register_map(PARAMS, regions=8)
    for r in range(8):
        assert regmap[f"R{r}_BASE_LO"].offset == REGION_BASE + r * REGION_STRIDE
        assert field_value(regmap, f"R{r}_AGG", "THRESHOLD") == 1, f"region {r}"
    with pytest.raises(KeyError, match="no register named 'R8_CFG'"):
        regmap["R8_CFG"]


@pytest.mark.parametrize("build, message", [
    (lambda: register_map(regions=0), "regions must be an integer from 1 to 32, not 0"),
    (lambda: Field("X", 30, 4, "RW", ""), "field X: bits [33:30] do not fit a 32-bit register"),
    (lambda: Field("X", 0, 1, "RO", ""), "field X: access must be one of"),
    (lambda: Field("X", 0, 2, "RW", "", reset=4), "field X: reset 0x4 does not fit 2 bits"),
    (lambda: Register("R", 0x2, ""), "register R: offset 0x2 is not 4-aligned"),
    (lambda: Register("R", 0x0, "", (Field("A", 0, 4, "RW", ""), Field("B", 3, 2, "RW", ""))),
     "register R: field B overlaps another"),
    (lambda: RegisterMap([Register("A", 0, ""), Register("B", 0, "")], window_bytes=64),
     "register B at 0x0 repeats a name or an offset"),
    (lambda: RegisterMap([Register("A", 64, "")], window_bytes=64),
     "register A at 0x40 is outside the 0x40-byte window"),
])
def test_bad_descriptions_are_refused(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value).startswith(message)


def test_generated_python_constants_match_the_map(tmp_path):
    regmap = write_register_map(PARAMS, tmp_path, regions=8)
    constants = runpy.run_path(str(tmp_path / "nf_regs.py"))
    for reg in regmap:
        assert constants[reg.name] == reg.offset, reg.name
        assert constants[f"{reg.name}_RESET"] == reg.reset, reg.name
        for f in reg.fields:
            assert constants[f"{reg.name}_{f.name}_MASK"] == f.mask, f"{reg.name}.{f.name}"
            assert constants[f"{reg.name}_{f.name}_SHIFT"] == f.offset, f"{reg.name}.{f.name}"


def test_generated_c_header_compiles_and_agrees(tmp_path):
    regmap = write_register_map(PARAMS, tmp_path, regions=8)
    checks = [("NF_" + reg.name, reg.offset) for reg in regmap]
    checks += [(f"NF_{reg.name}_{f.name}_MASK", f.mask) for reg in regmap for f in reg.fields]
    program = tmp_path / "check.c"
    program.write_text('#include <stdio.h>\n#include "nf_regs.h"\nint main(void) {\n'
                       + "".join(f'  printf("%lu\\n", (unsigned long)({name}));\n'
                                 for name, _ in checks)
                       + "  return 0;\n}\n")
    subprocess.run(["gcc", "-Wall", "-Werror", "-o", str(tmp_path / "check"), str(program)],
                   check=True, cwd=tmp_path)
    printed = subprocess.run([str(tmp_path / "check")], check=True, capture_output=True,
                             text=True).stdout.split()
    for (name, want), got in zip(checks, printed, strict=True):
        assert int(got) == want, f"{name}: header says {got}, map says {want}"


def test_generated_markdown_lists_every_register(tmp_path):
    regmap = write_register_map(PARAMS, tmp_path, regions=2)
    table = (tmp_path / "nf_regs.md").read_text()
    for reg in regmap:
        assert f"| `{reg.offset:#06x}` | **{reg.name}** |" in table, reg.name
