"""Write the generated Verilog and its field maps: ``python -m hdl.generate --help``.

For one configuration this writes, into ``<out>/<datapath name>/`` (e.g. ``L512_W4_D5``):

- ``nf_datapath.v``: the Verilog module ``nf_datapath``;
- ``nf_datapath.vh``: Verilog ``localparam``\\ s for the parameters and every payload field's
  offset and width, for hand-written wrappers;
- ``nf_datapath.json`` and ``nf_datapath.md``: the same facts for scripts and for people;

and into ``<out>/<controller name>/`` (e.g. ``L512_W4_D5_R8_S256``, also naming the regions and
slots):

- ``nf_controller.v``: the CXL.mem controller ``nf_controller`` (:class:`hdl.top.ControllerTop`)
  built around that datapath, and ``nf_axi_reducer.v``: the same behind an AXI4 subordinate
  port (:class:`hdl.top.ReducerTop`); for each, ``.vh`` (its parameters as ``localparam`` s),
  ``.json`` (its parameters and derived numbers) and ``.md`` (those and its ports, with the
  interface each implements);
- ``nf_regs.py``, ``nf_regs.h``, ``nf_regs.md``, ``nf_regs.rdl``: the control-register map
  (:mod:`spec.regmap`) as Python constants, a C header, a table and SystemRDL.

Each folder also gets a FuseSoC core (``<top>.core``, CAPI2, :func:`core_file`) naming the
Verilog, the lint waivers (``nf_waivers.vlt``, a copy of ``hdl/waivers.vlt``), the top level,
and targets for lint (Verilator ``-Wall``) and simulation (Icarus Verilog, Verilator).
"""

import argparse
import importlib.metadata
import json
import shutil
from pathlib import Path

from amaranth import Const, Value
from amaranth.back import verilog
from amaranth.lib import data
from amaranth.lib.wiring import In

from spec.params import (
    ControllerParams,
    DatapathParams,
    Mode,
    Reason,
    add_controller_arguments,
    controller_from_arguments,
)
from spec.regmap import register_map

from .csr import READ_LATENCY, WRITE_LATENCY
from .datapath import AggregationDatapath
from .decode import AddressDecoder
from .top import PORT_INTERFACES, ControllerTop, ReducerTop

__all__ = ["DATAPATH_TOP", "CONTROLLER_TOP", "AXI_REDUCER_TOP", "WAIVERS", "component_verilog",
           "datapath_facts", "core_file", "write_core", "controller_ports", "write_datapath",
           "controller_facts", "controller_params", "write_controller", "write_axi_reducer",
           "write_register_map"]

DATAPATH_TOP = "nf_datapath"
CONTROLLER_TOP = "nf_controller"
AXI_REDUCER_TOP = "nf_axi_reducer"


def component_verilog(component, name, prefixes=None):
    """The Verilog module ``name`` of ``component``, with a port per signal of its signature,
    named ``<member>__<member>`` as Amaranth names them, or, for a top-level member in
    ``prefixes``, its prefix followed by the rest of the path (``{"m_axi": "m_axi_"}`` makes
    ``m_axi_awvalid``). Constant members, such as the ``ready`` of an ``always_ready`` stream,
    are not ports: Amaranth's default port list refuses them."""
    prefixes = prefixes or {}
    ports = {}
    for path, _, value in component.signature.flatten(component):
        value = Value.cast(value)
        if not isinstance(value, Const):
            head, *rest = map(str, path)
            port = (prefixes[head] + "__".join(rest) if head in prefixes
                    else "__".join([head, *rest]))
            ports[port] = (value, None)
    return verilog.convert(component, name=name, ports=ports, emit_src=False)


def _fields(layout, prefix=""):
    """``[name, offset, width, element]`` of every field of a struct or union layout, nested
    ones included; ``element`` describes array elements (``"512 x unsigned(4)"``) or is
    empty."""
    rows = []
    for name, field in layout:
        full = f"{prefix}{name}"
        shape = field.shape
        element = ""
        if isinstance(shape, data.ArrayLayout):
            element = f"{shape.length} x {shape.elem_shape!r}"
        rows.append([full, field.offset, field.width, element])
        if isinstance(shape, (data.StructLayout, data.UnionLayout)):
            rows.extend([n, field.offset + o, w, e] for n, o, w, e in _fields(shape, f"{full}."))
    return rows


def datapath_facts(dut):
    """Parameters, derived numbers and payload field maps of a datapath component."""
    p = dut.params
    return {
        "top": DATAPATH_TOP,
        "parameters": {"line_bits": p.line_bits, "counter_width": p.counter_width,
                       "latency": p.latency, "user_width": dut.user_width},
        "derived": {"capacity": p.capacity, "gbinary_lanes": p.gbinary_lanes,
                    "gternary_lanes": p.gternary_lanes, "gternary_sum_width":
                    p.gternary_sum_width, "state_bits": p.state_bits,
                    "state_n_offset": p.state_n_offset, "initiation_interval":
                    dut.initiation_interval},
        "enums": {"mode": {m.name: m.value for m in Mode},
                  "reason": {r.name: r.value for r in Reason}},
        "request_payload": _fields(dut.request.payload.shape()),
        "response_payload": _fields(dut.response.payload.shape()),
    }


def _header(facts):
    lines = [f"// {facts['top']}: parameters and payload field map. Generated by hdl.generate;",
             "// do not edit.", "`ifndef NF_DATAPATH_VH", "`define NF_DATAPATH_VH"]
    for group in ("parameters", "derived"):
        for key, value in facts[group].items():
            lines.append(f"localparam NF_{key.upper()} = {value};")
    for enum_name, members in facts["enums"].items():
        for member, value in members.items():
            lines.append(f"localparam NF_{enum_name.upper()}_{member} = {value};")
    for port in ("request_payload", "response_payload"):
        for name, offset, width, _ in facts[port]:
            ident = f"NF_{port}_{name}".upper().replace(".", "_")
            lines.append(f"localparam {ident}_OFFSET = {offset};")
            lines.append(f"localparam {ident}_WIDTH = {width};")
    lines.append("`endif")
    return "\n".join(lines) + "\n"


def _markdown(facts):
    out = [f"# `{facts['top']}` ({', '.join(f'{k}={v}' for k, v in facts['parameters'].items())})",
           "", "Generated by `hdl.generate`; the formats are explained in `docs/formats.md`.", "",
           "| quantity | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for g in ("parameters", "derived") for k, v in facts[g].items()]
    for enum_name, members in facts["enums"].items():
        out += ["", f"## `{enum_name}` codes", "", "| name | code |", "|---|---|"]
        out += [f"| `{member}` | {value} |" for member, value in members.items()]
    for port in ("request_payload", "response_payload"):
        out += ["", f"## `{port.replace('_payload', '__payload')}` fields", "",
                "| field | bits | array of |", "|---|---|---|"]
        out += [f"| `{n}` | [{o + w - 1}:{o}] | {e} |" for n, o, w, e in facts[port]]
    return "\n".join(out) + "\n"


#: The lint waivers of the generated Verilog, copied beside it for its FuseSoC core.
WAIVERS = Path(__file__).with_name("waivers.vlt")


def core_file(top, config, description):
    """A FuseSoC CAPI2 core for the Verilog module ``top`` of configuration ``config``, whose
    files (``<top>.v``, ``nf_waivers.vlt``) sit beside it: the VLNV
    ``neuron-fabric:nf:<top>_<config>:<version>``, a fileset, and the targets ``default``,
    ``lint`` (Verilator ``--lint-only -Wall`` with the waivers), ``sim_icarus`` and
    ``sim_verilator`` (the model's C++, for a testbench of the user's)."""
    version = importlib.metadata.version("neuron-fabric")
    return f"""CAPI=2:
# Generated by hdl.generate; do not edit.
name: neuron-fabric:nf:{top}_{config}:{version}
description: {description}

filesets:
  rtl:
    files:
      - {top}.v
    file_type: verilogSource
  waivers:
    files:
      - nf_waivers.vlt
    file_type: vlt

targets:
  default: &default
    filesets: [rtl]
    toplevel: {top}
  lint:
    <<: *default
    default_tool: verilator
    filesets: [rtl, waivers]
    tools:
      verilator:
        mode: lint-only
        verilator_options: [-Wall]
  sim_icarus:
    <<: *default
    default_tool: icarus
  sim_verilator:
    <<: *default
    default_tool: verilator
    filesets: [rtl, waivers]
    tools:
      verilator:
        mode: cc
"""


def write_core(out_dir, top, config, description):
    """Write :func:`core_file` and the waivers it names into ``out_dir``; returns the core's
    path."""
    out_dir = Path(out_dir)
    shutil.copyfile(WAIVERS, out_dir / "nf_waivers.vlt")
    path = out_dir / f"{top}.core"
    path.write_text(core_file(top, config, description))
    return path


def write_datapath(params, out_dir, *, user_width=16):
    """Generate the datapath for ``params`` into ``out_dir``; returns the Verilog path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dut = AggregationDatapath(params, user_width=user_width)
    facts = datapath_facts(dut)
    source = component_verilog(dut, DATAPATH_TOP)
    (out_dir / f"{DATAPATH_TOP}.v").write_text(source)
    (out_dir / f"{DATAPATH_TOP}.vh").write_text(_header(facts))
    (out_dir / f"{DATAPATH_TOP}.json").write_text(json.dumps(facts, indent=2) + "\n")
    (out_dir / f"{DATAPATH_TOP}.md").write_text(_markdown(facts))
    write_core(out_dir, DATAPATH_TOP, params.name,
               f"NEURON-Fabric low-bit aggregation datapath, {params.name}")
    return out_dir / f"{DATAPATH_TOP}.v"


def controller_facts(params):
    """Parameters and derived numbers of a controller configuration."""
    p = params.datapath
    return {
        "top": CONTROLLER_TOP,
        "parameters": {"line_bits": p.line_bits, "counter_width": p.counter_width,
                       "latency": p.latency, "regions": params.regions,
                       "address_bits": params.address_bits, "window_base": params.window_base,
                       "queue_depth": params.queue_depth, "axi_id_bits": params.axi_id_bits,
                       "slots": params.slots},
        "derived": {"capacity": p.capacity, "state_lines": p.state_lines,
                    "accumulator_lines": p.accumulator_lines,
                    "accumulator_bytes_per_line": params.accumulator_bytes_per_line,
                    "window_bytes": params.window_bytes,
                    "devload_limits": list(params.devload_limits),
                    "csr_read_latency": READ_LATENCY, "csr_write_latency": WRITE_LATENCY,
                    "decode_latency": AddressDecoder.LATENCY},
    }


def controller_params(facts):
    """The :class:`ControllerParams` that :func:`controller_facts` described."""
    q = facts["parameters"]
    return ControllerParams(
        DatapathParams(line_bits=q["line_bits"], counter_width=q["counter_width"],
                       latency=q["latency"]),
        regions=q["regions"], address_bits=q["address_bits"], window_base=q["window_base"],
        queue_depth=q["queue_depth"], axi_id_bits=q["axi_id_bits"], slots=q["slots"])


def controller_ports(top):
    """``[name, direction, width, interface]`` of every port of the generated controller
    ``top`` (a :class:`hdl.top.ControllerTop`), in its signature's order."""
    rows = []
    for path, member, value in top.signature.flatten(top):
        value = Value.cast(value)
        if isinstance(value, Const):
            continue
        head, *rest = map(str, path)
        interface, prefix = PORT_INTERFACES[head]
        rows.append([prefix + "__".join(rest), "input" if member.flow == In else "output",
                     len(value), interface])
    return rows


def _controller_header(facts):
    """Verilog ``localparam`` s of a controller's parameters and derived numbers, prefixed
    ``NF_CTRL_`` (so that the datapath's header can be included beside it)."""
    guard = f"{facts['top'].upper()}_VH"
    lines = [f"// {facts['top']}: parameters. Generated by hdl.generate; do not edit.",
             f"`ifndef {guard}", f"`define {guard}"]
    for group in ("parameters", "derived"):
        for key, value in facts[group].items():
            values = value if isinstance(value, list) else [value]
            for k, item in enumerate(values):
                suffix = f"_{k}" if isinstance(value, list) else ""
                lines.append(f"localparam NF_CTRL_{key.upper()}{suffix} = {item};")
    lines.append("`endif")
    return "\n".join(lines) + "\n"


def _controller_markdown(facts, ports):
    out = [f"# `{facts['top']}` ({facts['config']})", "",
           "Generated by `hdl.generate`; the behaviour is in `docs/controller.md`.", "",
           "| quantity | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for g in ("parameters", "derived") for k, v in facts[g].items()]
    out += ["", "## Ports", "", "| port | direction | bits | interface |", "|---|---|---|---|"]
    out += [f"| `{name}` | {direction} | {width} | {interface} |"
            for name, direction, width, interface in ports]
    return "\n".join(out) + "\n"


def write_controller(params, out_dir, primitives=None):
    """Generate the controller for ``params`` (its block RAM and its pool's read-back carry
    chains made as ``primitives`` says: :class:`hdl.bram.RegisteredMemory`,
    :func:`hdl.arith.sum_bits`) into ``out_dir`` as ``nf_controller``
    (:class:`hdl.top.ControllerTop`). Returns the Verilog path."""
    return _write_top(ControllerTop(params, primitives=primitives), CONTROLLER_TOP, out_dir,
                      f"NEURON-Fabric CXL.mem aggregating memory controller, {params.name}"
                      + (f", {primitives} primitives" if primitives else ""))


def write_axi_reducer(params, out_dir, primitives=None):
    """Generate the controller for ``params`` behind an AXI4 subordinate port into
    ``out_dir`` as ``nf_axi_reducer`` (:class:`hdl.top.ReducerTop`). Returns the Verilog
    path."""
    return _write_top(ReducerTop(params, primitives=primitives), AXI_REDUCER_TOP, out_dir,
                      f"NEURON-Fabric AXI4 aggregating memory, {params.name}"
                      + (f", {primitives} primitives" if primitives else ""))


def _write_top(top, name, out_dir, description):
    """Write top ``name``: the Verilog, a parameter header (``.vh``), its facts (``.json``),
    a table of its parameters and ports (``.md``) and a FuseSoC core."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    params = top.params
    prefixes = {member: prefix for member, (_, prefix) in PORT_INTERFACES.items()}
    facts = {**controller_facts(params), "top": name}
    (out_dir / f"{name}.v").write_text(component_verilog(top, name, prefixes))
    (out_dir / f"{name}.vh").write_text(_controller_header(facts))
    (out_dir / f"{name}.json").write_text(json.dumps(facts, indent=2) + "\n")
    (out_dir / f"{name}.md").write_text(
        _controller_markdown({**facts, "config": params.name}, controller_ports(top)))
    write_core(out_dir, name, params.name, description)
    return out_dir / f"{name}.v"


def write_register_map(params, out_dir):
    """Write the register map of controller configuration ``params``: Python constants, a C
    header, a Markdown table and SystemRDL."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    regmap = register_map(params)
    (out_dir / "nf_regs.py").write_text(regmap.python_constants())
    (out_dir / "nf_regs.h").write_text(regmap.c_header())
    (out_dir / "nf_regs.md").write_text(regmap.markdown())
    (out_dir / "nf_regs.rdl").write_text(regmap.systemrdl())
    return regmap


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/verilog", help="output folder")
    add_controller_arguments(parser)
    parser.add_argument("--primitives", choices=["ecp5"], default=None,
                        help="instantiate the LFE5U's DP16KD block RAMs (with their output "
                             "registers) instead of inferred memories, and CCU2C carry chains "
                             "of several compares for the pool's read-back, for an ECP5 flow; "
                             "the simulations run the inferred form")
    args = parser.parse_args(argv)
    controller = controller_from_arguments(parser, args)
    datapath = write_datapath(controller.datapath, Path(args.out) / controller.datapath.name)
    folder = Path(args.out) / controller.name
    write_controller(controller, folder, args.primitives)
    write_axi_reducer(controller, folder, args.primitives)
    write_register_map(controller, folder)
    print(f"wrote {datapath} (+ .vh, .json, .md, .core beside it), and in {folder}: "
          f"{CONTROLLER_TOP}.v and {AXI_REDUCER_TOP}.v (each + .vh, .json, .md, .core) and the "
          f"register map nf_regs.py, nf_regs.h, nf_regs.md, nf_regs.rdl")


if __name__ == "__main__":
    main()
