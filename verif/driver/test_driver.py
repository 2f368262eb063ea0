"""The host driver's own checks: refused arguments and devices, with messages that say what to do.
(Its work against the RTL is in the controller's cocotb regression.)"""

import asyncio

import pytest

from driver import ConfigurationError, DeviceError, NeuronFabric
from spec.params import ControllerParams
from spec.regmap import ConfigError, Region


class SilentMemory:
    """A transport whose every line reads zero and which records writes."""

    def __init__(self, line_bytes):
        self.line_bytes, self.writes = line_bytes, []

    async def read_line(self, address):
        return bytes(self.line_bytes)

    async def write_line(self, address, data, byte_enable):
        self.writes.append((address, data, byte_enable))


def _device():
    params = ControllerParams()
    return NeuronFabric(SilentMemory(params.datapath.line_bytes), params), params


def test_identify_refuses_a_device_without_the_magic():
    device, params = _device()
    with pytest.raises(DeviceError, match=r"ID reads 0x00000000, not 0x4e464142 \(\"NFAB\"\): "
                                          r"wrong window base"):
        asyncio.run(device.identify())


def test_register_writes_are_word_writes_in_the_window():
    device, params = _device()
    asyncio.run(device.write("R1_AGG", 0x0003_0002))
    offset = device.regmap["R1_AGG"].offset
    line = params.window_base + offset - offset % params.datapath.line_bytes
    (address, data, enables), = device.transport.writes
    byte = offset % params.datapath.line_bytes
    assert (address, enables) == (line, 0xF << byte)
    assert data[byte:byte + 4] == (0x0003_0002).to_bytes(4, "little")


def test_bad_arguments_are_refused_before_any_access():
    device, params = _device()
    with pytest.raises(ValueError, match="register CTRL takes 32-bit values, not -1"):
        asyncio.run(device.write("CTRL", -1))
    with pytest.raises(ValueError, match="the device has 8 regions, not 9"):
        asyncio.run(device.configure([Region()] * 9))
    with pytest.raises(ValueError, match="region must be 0 to 7, not 8"):
        asyncio.run(device.clear(8))
    with pytest.raises(ValueError, match="region mode 0 keeps no accumulator state"):
        asyncio.run(device.read_state(Region(), 0))
    assert not device.transport.writes


def test_busy_bit_that_never_clears_is_reported(monkeypatch):
    device, params = _device()
    monkeypatch.setattr("driver.device.MAX_POLLS", 3)

    async def busy(reg, name):
        return 1
    device.field = busy
    with pytest.raises(DeviceError, match=r"APPLY: STATUS.APPLY_BUSY did not become 0 within 3 "
                                          r"reads; is the device clocked and out of reset\?"):
        asyncio.run(device.configure([]))


def test_configuration_error_names_region_reason_and_remedy():
    error = ConfigurationError(2, ConfigError.OVERLAP)
    assert str(error) == ("APPLY refused region 2: OVERLAP (two enabled regions share addresses; "
                          "move or shrink one); the previous configuration stays in force")
