"""``python -m hdl.generate``: files written, field maps consistent with the layouts, bad
parameters refused with a message."""

import json
import subprocess
import sys

from hdl.datapath import request_layout, response_layout
from hdl.generate import CONTROLLER_TOP, DATAPATH_TOP, controller_params, main
from spec.params import ControllerParams, DatapathParams, Mode, Reason


def test_generate_writes_verilog_and_field_maps(tmp_path, capsys):
    main(["--out", str(tmp_path), "--line-bits", "32", "--counter-width", "2",
          "--latency", "3"])
    params = DatapathParams(line_bits=32, counter_width=2, latency=3)
    folder = tmp_path / params.name
    assert f"wrote {folder / (DATAPATH_TOP + '.v')}" in capsys.readouterr().out
    verilog = (folder / f"{DATAPATH_TOP}.v").read_text()
    assert f"module {DATAPATH_TOP}(" in verilog

    facts = json.loads((folder / f"{DATAPATH_TOP}.json").read_text())
    assert facts["parameters"] == {"line_bits": 32, "counter_width": 2, "latency": 3,
                                   "user_width": 16}
    assert facts["derived"]["capacity"] == 3 and facts["derived"]["state_bits"] == 66
    assert facts["enums"]["mode"] == {m.name: m.value for m in Mode}
    for port, layout in (("request_payload", request_layout(params, 16)),
                         ("response_payload", response_layout(params, 16))):
        top = {name: (offset, width) for name, offset, width, _ in facts[port]}
        for name, field in layout:
            assert top[name] == (field.offset, field.width), f"{port}.{name}"

    header = (folder / f"{DATAPATH_TOP}.vh").read_text()
    state = request_layout(params, 16)["state"]
    assert f"localparam NF_REQUEST_PAYLOAD_STATE_OFFSET = {state.offset};" in header
    assert f"localparam NF_REASON_CAPACITY = {Reason.CAPACITY.value};" in header
    assert "| capacity | 3 |" in (folder / f"{DATAPATH_TOP}.md").read_text()

    # The controller and its register map in a folder of their own, named after the regions
    # and slots too, so that another REGIONS= or SLOTS= does not overwrite the default's.
    folder = tmp_path / ControllerParams(params).name
    assert f"module {CONTROLLER_TOP}(" in (folder / f"{CONTROLLER_TOP}.v").read_text()
    controller = json.loads((folder / f"{CONTROLLER_TOP}.json").read_text())
    assert controller_params(controller) == ControllerParams(params), controller
    assert controller["derived"]["state_lines"] == params.state_lines
    assert "CAP_POOL" in (folder / "nf_regs.md").read_text()
    assert "addrmap nf_regs {" in (folder / "nf_regs.rdl").read_text()
    # The conventional top: its ports as vendor tools name them, a parameter header, and the
    # interface of each port in the table.
    verilog = (folder / f"{CONTROLLER_TOP}.v").read_text()
    for port in ("input aclk", "input aresetn", "output m_axi_awvalid", "input s_axil_awvalid",
                 "output [31:0] s_axil_rdata", "input m2s_req__valid"):
        assert port in verilog, f"{CONTROLLER_TOP}.v has no `{port}`"
    vh = (folder / f"{CONTROLLER_TOP}.vh").read_text()
    assert f"localparam NF_CTRL_SLOTS = {ControllerParams(params).slots};" in vh, vh[:400]
    table = (folder / f"{CONTROLLER_TOP}.md").read_text()
    for row in ("| `aclk` | input | 1 |", "| `s_axil_bresp` | output | 2 | AXI4-Lite",
                "| `m_axi_wdata` | output | "):
        assert row in table, f"{CONTROLLER_TOP}.md has no row starting {row!r}"


def test_generate_refuses_too_narrow_controller_lines():
    result = subprocess.run([sys.executable, "-m", "hdl.generate", "--line-bits", "16"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "the controller needs lines of at least 32 bits" in result.stderr


def test_generate_refuses_bad_parameters():
    result = subprocess.run([sys.executable, "-m", "hdl.generate", "--line-bits", "100"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "line_bits must be one of (16, 32, 64, 128, 256, 512), not 100" in result.stderr
