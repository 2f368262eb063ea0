"""CXL.mem layouts carry exactly the fields and widths of the CXL 2.0 flit messages, less
the Valid bit that the stream's ``valid`` carries."""

import pytest

from spec.cxl import (
    DRSOpcode,
    NDROpcode,
    ReqOpcode,
    RwDOpcode,
    m2s_req_layout,
    m2s_rwd_layout,
    s2m_drs_layout,
    s2m_ndr_layout,
)

# Header widths from the CXL 2.0 message tables, Valid excluded.
HEADER_BITS = {"M2S Req": 87 - 1, "M2S RwD": 87 - 1, "S2M NDR": 30 - 1, "S2M DRS": 40 - 1}


@pytest.mark.parametrize("name, layout, data_bits", [
    ("M2S Req", m2s_req_layout(), 0),
    ("M2S RwD", m2s_rwd_layout(), 512 + 64),
    ("S2M NDR", s2m_ndr_layout(), 0),
    ("S2M DRS", s2m_drs_layout(), 512),
])
def test_message_widths(name, layout, data_bits):
    assert layout.size - data_bits == HEADER_BITS[name], \
        f"{name}: header is {layout.size - data_bits} bits, CXL 2.0 says {HEADER_BITS[name]}"


def test_address_fields_cover_bits_51_down_to_5_and_6():
    assert m2s_req_layout()["address"].width == 51 - 5 + 1
    assert m2s_rwd_layout()["address"].width == 51 - 6 + 1


def test_opcode_encodings():
    assert {o.name: o.value for o in ReqOpcode} == {
        "MEM_INV": 0, "MEM_RD": 1, "MEM_RD_DATA": 2, "MEM_RD_FWD": 3, "MEM_WR_FWD": 4,
        "MEM_SPEC_RD": 8, "MEM_INV_NT": 9}
    assert (RwDOpcode.MEM_WR.value, RwDOpcode.MEM_WR_PTL.value) == (1, 2)
    assert [o.value for o in NDROpcode] == [0, 1, 2]
    assert [o.value for o in DRSOpcode] == [0, 1]
