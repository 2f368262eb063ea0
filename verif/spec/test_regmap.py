"""The register map description and the artefacts generated from it (Python constants, C
header, Markdown, and SystemRDL compiled by ``systemrdl-compiler`` and read back)."""

import runpy
import subprocess

import pytest
from systemrdl import RDLCompiler
from systemrdl.rdltypes import AccessType, OnWriteType

from hdl.generate import write_register_map
from spec.params import REGISTER_BITS, ControllerParams, DatapathParams
from spec.regmap import (
    ID_MAGIC,
    REGION_BASE,
    REGION_STRIDE,
    Access,
    Field,
    Register,
    RegisterMap,
    register_map,
)

PARAMS = DatapathParams(line_bits=128, counter_width=5, latency=2)


def controller(regions):
    return ControllerParams(PARAMS, regions=regions)


def field_value(regmap, reg, name):
    return regmap[reg].unpack(regmap[reg].reset)[name]


def test_capabilities_come_from_the_parameters():
    regmap = register_map(controller(12))
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
    regmap = register_map(controller(8))
    for r in range(8):
        assert regmap[f"R{r}_BASE_LO"].offset == REGION_BASE + r * REGION_STRIDE
        assert field_value(regmap, f"R{r}_AGG", "THRESHOLD") == 1, f"region {r}"
    with pytest.raises(KeyError, match="no register named 'R8_CFG'"):
        regmap["R8_CFG"]


@pytest.mark.parametrize("build, message", [
    (lambda: Field("X", 30, 4, Access.RW, ""),
     "field X: bits [33:30] do not fit a 32-bit register"),
    (lambda: Field("X", 0, 2, Access.WS, ""), "field X: WS fields are 1 bit wide, not 2"),
    (lambda: Field("X", 0, 2, Access.RW, "", reset=4), "field X: reset 0x4 does not fit 2 bits"),
    (lambda: Register("R", 0x2, ""), "register R: offset 0x2 is not 4-aligned"),
    (lambda: Register("R", 0x0, "", (Field("A", 0, 4, Access.RW, ""),
                                     Field("B", 3, 2, Access.RW, ""))),
     "register R: field B overlaps another"),
    (lambda: register_map()["CTRL"].pack(CLEAR_REGION=32),
     "CTRL.CLEAR_REGION: 32 does not fit 5 bits"),
    (lambda: RegisterMap([Register("A", 0, ""), Register("B", 0, "")], window_bytes=64),
     "register B at 0x0 repeats a name or an offset"),
    (lambda: RegisterMap([Register("A", 64, "")], window_bytes=64),
     "register A at 0x40 is outside the 0x40-byte window"),
])
def test_bad_descriptions_are_refused(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("build, message", [
    (lambda: register_map(PARAMS), "register_map takes a ControllerParams"),
    (lambda: Field("X", 0, 1, "RW", ""), "field X: access must be an Access, not 'RW'"),
])
def test_wrong_types_are_refused(build, message):
    with pytest.raises(TypeError) as info:
        build()
    assert str(info.value).startswith(message)


def test_pack_and_unpack_place_each_field_at_its_bits():
    ctrl = register_map()["CTRL"]
    word = ctrl.pack(ENABLE=1, CLEAR_REGION=5)
    assert word == ctrl.field("ENABLE").mask | 5 << ctrl.field("CLEAR_REGION").offset, hex(word)
    assert ctrl.unpack(word) == {"ENABLE": 1, "LOCK": 0, "APPLY": 0, "CLEAR": 0, "FLUSH": 0,
                                 "CLEAR_REGION": 5}


def test_generated_python_constants_match_the_map(tmp_path):
    regmap = write_register_map(controller(8), tmp_path)
    constants = runpy.run_path(str(tmp_path / "nf_regs.py"))
    for reg in regmap:
        assert constants[reg.name] == reg.offset, reg.name
        assert constants[f"{reg.name}_RESET"] == reg.reset, reg.name
        for f in reg.fields:
            assert constants[f"{reg.name}_{f.name}_MASK"] == f.mask, f"{reg.name}.{f.name}"
            assert constants[f"{reg.name}_{f.name}_SHIFT"] == f.offset, f"{reg.name}.{f.name}"


def test_generated_c_header_compiles_and_agrees(tmp_path):
    regmap = write_register_map(controller(8), tmp_path)
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
    regmap = write_register_map(controller(2), tmp_path)
    table = (tmp_path / "nf_regs.md").read_text()
    for reg in regmap:
        assert f"| `{reg.offset:#06x}` | **{reg.name}** |" in table, reg.name


def _access(field):
    """The :class:`Access` that a compiled field's properties describe."""
    sw, hw = field.get_property("sw"), field.get_property("hw")
    onwrite = field.get_property("onwrite")
    if field.get_property("singlepulse"):
        return Access.WS
    if onwrite == OnWriteType.woclr and field.get_property("hwset"):
        return Access.RW1C
    if onwrite == OnWriteType.woset:
        return Access.RW1S
    if (sw, hw, onwrite) == (AccessType.r, AccessType.w, None):
        return Access.R
    if (sw, hw, onwrite) == (AccessType.rw, AccessType.r, None):
        return Access.RW
    raise AssertionError(f"{field.get_path()}: sw={sw}, hw={hw}, onwrite={onwrite} is no Access")


@pytest.mark.parametrize("regions", [1, 8, 32])
def test_generated_systemrdl_compiles_to_the_map(regions, tmp_path):
    regmap = write_register_map(controller(regions), tmp_path)
    source = tmp_path / "nf_regs.rdl"
    compiler = RDLCompiler()
    compiler.compile_file(str(source))
    top = compiler.elaborate(top_def_name="nf_regs").top
    compiled = {reg.inst_name: reg for reg in top.registers()}
    assert list(compiled) == [reg.name for reg in regmap], \
        f"regions={regions}: registers {list(compiled)} differ from the map's"
    for reg in regmap:
        node = compiled[reg.name]
        where = f"regions={regions}, {reg.name}"
        assert node.absolute_address == reg.offset, \
            f"{where}: at {node.absolute_address:#x}, the map says {reg.offset:#x}"
        assert node.get_property("regwidth") == REGISTER_BITS, f"{where}: regwidth"
        fields = {f.inst_name: f for f in node.fields()}
        assert sorted(fields) == sorted(f.name for f in reg.fields), \
            f"{where}: fields {sorted(fields)}, the map has {[f.name for f in reg.fields]}"
        for f in reg.fields:
            got = fields[f.name]
            assert (got.lsb, got.width) == (f.offset, f.width), \
                f"{where}.{f.name}: bits [{got.msb}:{got.lsb}], the map says " \
                f"[{f.offset + f.width - 1}:{f.offset}]"
            assert (got.get_property("reset") or 0) == f.reset, f"{where}.{f.name}: reset"
            assert _access(got) == f.access, \
                f"{where}.{f.name}: {_access(got).value}, the map says {f.access.value}"
