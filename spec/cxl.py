"""CXL.mem message layouts: the fields of the CXL 2.0 68-byte flit messages of the four channels
the device uses, and the opcodes it knows.

Each channel is a valid/ready stream of one of these layouts. The stream's ``valid`` is the
message's Valid bit, so the layouts leave it out; ``ready`` stands in for link-layer credits
(a message moves only when the receiver has room, as a credit return would allow).
"""

from amaranth.lib import data, enum

__all__ = ["ReqOpcode", "RwDOpcode", "NDROpcode", "DRSOpcode", "MetaField", "MetaValue",
           "SnpType", "DevLoad", "m2s_req_layout", "m2s_rwd_layout", "s2m_ndr_layout",
           "s2m_drs_layout", "TAG_BITS", "LD_ID_BITS"]

#: Widths of the Tag and LD-ID fields of every message: responses carry the request's own.
TAG_BITS, LD_ID_BITS = 16, 4

#: A request's Address field counts half lines (Address[51:5]), a data request's whole lines
#: (Address[51:6]); lines are ``line_bits`` wide (64 bytes in CXL).
REQ_ADDRESS_BITS, RWD_ADDRESS_BITS = 47, 46


class ReqOpcode(enum.Enum, shape=4):
    MEM_INV = 0b0000
    MEM_RD = 0b0001
    MEM_RD_DATA = 0b0010
    MEM_RD_FWD = 0b0011
    MEM_WR_FWD = 0b0100
    MEM_SPEC_RD = 0b1000
    MEM_INV_NT = 0b1001


class RwDOpcode(enum.Enum, shape=4):
    MEM_WR = 0b0001
    MEM_WR_PTL = 0b0010


class NDROpcode(enum.Enum, shape=3):
    CMP = 0b000
    CMP_S = 0b001
    CMP_E = 0b010


class DRSOpcode(enum.Enum, shape=3):
    MEM_DATA = 0b000
    MEM_DATA_NXM = 0b001


class MetaField(enum.Enum, shape=2):
    META0_STATE = 0b00
    NO_OP = 0b11


class MetaValue(enum.Enum, shape=2):
    INVALID = 0b00
    ANY = 0b10
    SHARED = 0b11


class SnpType(enum.Enum, shape=3):
    NO_OP = 0b000


class DevLoad(enum.Enum, shape=2):
    LIGHT = 0b00
    OPTIMAL = 0b01
    MODERATE = 0b10
    SEVERE = 0b11


def _width(enum_type):
    return enum_type.as_shape().width


def m2s_req_layout():
    """Host-to-device request without data (Address[51:5])."""
    return data.StructLayout({
        "opcode": _width(ReqOpcode), "snp_type": _width(SnpType),
        "meta_field": _width(MetaField), "meta_value": _width(MetaValue), "tag": TAG_BITS,
        "address": REQ_ADDRESS_BITS, "ld_id": LD_ID_BITS, "spare": 6, "tc": 2,
    })


def m2s_rwd_layout(line_bits=512):
    """Host-to-device request with a data line (Address[51:6]); ``byte_enable`` is the
    MemWrPtl mask (all ones for MemWr)."""
    return data.StructLayout({
        "opcode": _width(RwDOpcode), "snp_type": _width(SnpType),
        "meta_field": _width(MetaField), "meta_value": _width(MetaValue), "tag": TAG_BITS,
        "address": RWD_ADDRESS_BITS, "poison": 1, "ld_id": LD_ID_BITS, "spare": 6, "tc": 2,
        "byte_enable": line_bits // 8, "data": line_bits,
    })


def s2m_ndr_layout():
    """Device-to-host response without data (write completions)."""
    return data.StructLayout({
        "opcode": _width(NDROpcode), "meta_field": _width(MetaField),
        "meta_value": _width(MetaValue), "tag": TAG_BITS, "ld_id": LD_ID_BITS,
        "dev_load": _width(DevLoad),
    })


def s2m_drs_layout(line_bits=512):
    """Device-to-host response with a data line (read data)."""
    return data.StructLayout({
        "opcode": _width(DRSOpcode), "meta_field": _width(MetaField),
        "meta_value": _width(MetaValue), "tag": TAG_BITS, "poison": 1, "ld_id": LD_ID_BITS,
        "dev_load": _width(DevLoad), "spare": 9, "data": line_bits,
    })
