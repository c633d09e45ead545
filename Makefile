# The front door. `make demo` and `make test` do all the set-up a fresh Debian 12 or 13 machine
# needs: Debian's packages, the virtual environment .venv with the PyPI packages of
# requirements.txt (PyTorch among them: the C++ side builds against its LibTorch), the data.
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
VENV ?= $(CURDIR)/.venv
# Every Python command below runs in the venv; CMake builds against the torch it holds.
PYTHON := $(VENV)/bin/python
# ccache hits across build folders and checkouts: paths under the checkout are hashed relative.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
# and caches the translation units that use the precompiled LibTorch headers (cmake/torch_pch.cmake).
export CCACHE_SLOPPINESS ?= pch_defines,time_macros

.PHONY: all deps data configure build build-demo demo test test-sanitize fuzz bench bench-python bench-transformer bench-compile bench-loss bench-integrations bench-fsdp validate validate-compression clean

all: build

deps:
	@bash scripts/install-deps.sh
	@GRADSCOPE_VENV=$(VENV) bash scripts/setup-venv.sh

data: deps
	@bash scripts/fetch-data.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADSCOPE_PYTHON=$(PYTHON) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# What the demo runs, and nothing else: the run tool, the demo it starts and the Python module
# (tests, sanitizer and fuzz builds and benchmarks are for make test, make fuzz and make bench).
DEMO_TARGETS = gradscope gradscope_demo gradscope_python

build-demo: configure
	@echo "make demo: building $(DEMO_TARGETS) (ninja counts the steps: [done/all])"
	@cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)

demo: data build-demo
	@$(BUILD)/gradscope demo --data-dir data --out gradscope-runs
	@PYTHONPATH=$(BUILD)/python $(PYTHON) scripts/python_demo.py data gradscope-runs $(BUILD)/gradscope

# No test may skip: one that cannot run fails, naming what to install; and should ctest still
# report a test skipped or disabled, make test fails after listing it.
test: data build
	@cd $(BUILD) && set -o pipefail && \
	  GRADSCOPE_DATA_DIR=$(CURDIR)/data ctest --output-on-failure -j $(JOBS) | tee ctest-output.log
	@if grep -qE '\((Skipped|Disabled)\)$$' $(BUILD)/ctest-output.log; then \
	  echo "make test: the tests above did not run; no test may skip (install what they name)" >&2; \
	  exit 1; fi

# The whole test suite under ASan + UBSan (leak checks on), in its own build folder; about
# half an hour on two cores (docs/reliability.md says what it covers and what it does not).
SANITIZE_BUILD ?= $(BUILD)/sanitize
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

test-sanitize: data
	@cmake -DGRADSCOPE_PYTHON=$(PYTHON) -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRADSCOPE_SANITIZE=ON \
	  -DGRADSCOPE_SANITIZE_TESTS=OFF -DGRADSCOPE_FUZZ=OFF -DGRADSCOPE_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@$(SANITIZER_ENV) cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	@cd $(SANITIZE_BUILD) && $(SANITIZER_ENV) GRADSCOPE_DATA_DIR=$(CURDIR)/data ctest --output-on-failure -j $(JOBS)

# Each fuzz target (tests/fuzz/targets.txt) for FUZZ_SECONDS, its corpus kept between runs in
# $(BUILD)/fuzz/corpus/<target>; crashing inputs land in $(BUILD)/fuzz/crashes/<target>.
# FUZZ_SEED=0: a new random seed each run (libFuzzer prints it). make test runs them briefly.
FUZZ_SECONDS ?= 600
FUZZ_SEED ?= 0
FUZZ_TARGETS ?= $(shell sed -nE 's/^([a-z0-9_]+)( [0-9]+)?$$/\1/p' tests/fuzz/targets.txt)

fuzz: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_fuzz
	@$(BUILD)/fuzz/fuzz_seeds $(BUILD)/fuzz/seeds
	@status=0; for t in $(FUZZ_TARGETS); do \
	  bash tests/fuzz/run_fuzzer.sh $(BUILD)/fuzz $$t $(FUZZ_SECONDS) $(FUZZ_SEED) $(BUILD)/fuzz/corpus/$$t; \
	  [ $$? -eq 0 ] || status=1; \
	done; exit $$status

# Every benchmark program in bench/ (bench_<name> -> make bench-<name>).
BENCHES := $(patsubst bench/%_bench.cpp,%,$(wildcard bench/*_bench.cpp))

bench: $(addprefix bench-,$(BENCHES)) bench-python bench-transformer bench-compile bench-loss bench-integrations bench-fsdp

# The Python audit against plain PyTorch steps (bench/python_bench.py; docs/benchmarks.md).
bench-python: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(BUILD)/python $(PYTHON) bench/python_bench.py

# The attention statistics on the validation's GPT (bench/transformer_bench.py; docs/benchmarks.md).
bench-transformer: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(BUILD)/python $(PYTHON) bench/transformer_bench.py

# torch.compile under an Audit: eager, audited, compiled and both (bench/compile_bench.py; docs/benchmarks.md).
bench-compile: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(BUILD)/python $(PYTHON) bench/compile_bench.py

# The loss series on the spike validation's LSTM (bench/loss_bench.py; docs/benchmarks.md).
bench-loss: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(BUILD)/python $(PYTHON) bench/loss_bench.py

# Each integration's callback inside its trainer (bench/integrations_bench.py; docs/integrations.md).
bench-integrations: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(BUILD)/python $(PYTHON) bench/integrations_bench.py

# The collectives an Audit adds to an FSDP2 step at 2 and 4 ranks (bench/fsdp_bench.py; docs/distributed.md).
bench-fsdp: configure
	@cmake --build $(BUILD) -j $(JOBS) --target gradscope_python
	@PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) bench/fsdp_bench.py

# bench-compression trains on Fashion-MNIST and the digits: fetch them first.
bench-compression: configure
	@bash scripts/fetch-data.sh fashion-mnist
	@cmake --build $(BUILD) -j $(JOBS) --target bench_compression
	@$(BUILD)/bench/bench_compression data

bench-%: configure
	@cmake --build $(BUILD) -j $(JOBS) --target bench_$*
	@$(BUILD)/bench/bench_$*

# Validation on MovieLens (r-cran-dslabs, installed on first use); docs/validation.md.
# validate-baseline: most popular against BPR tuned on a validation split.
# validate-faults: planted faults against the embedding findings, ground truth computed apart.
# validate-embedding: the auto-fix against no fix on the run where zombie rows are real.
validate: validate-baseline validate-faults validate-embedding

# validate-compression: the dynamics recipe against uniform and magnitude baselines at equal
# bytes, digits, Fashion-MNIST and MovieLens MF tables, 5 seeds (docs/validation.md); not part of `make validate`.
validate-compression: configure
	@bash scripts/fetch-data.sh fashion-mnist
	@bash scripts/fetch-data.sh movielens
	@cmake --build $(BUILD) -j $(JOBS) --target validate_compression
	@$(BUILD)/bench/validate_compression data

validate-%: configure
	@bash scripts/fetch-data.sh movielens
	@cmake --build $(BUILD) -j $(JOBS) --target validate_$*
	@$(BUILD)/bench/validate_$* data

clean:
	rm -rf $(BUILD)
