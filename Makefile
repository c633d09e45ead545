# The front door. `make demo` and `make test` do all the set-up a fresh Debian 12 machine needs.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache hits across build folders and checkouts: paths under the checkout are hashed relative.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

.PHONY: all deps data configure build demo test bench validate clean

all: build

deps:
	@bash scripts/install-deps.sh

data: deps
	@bash scripts/fetch-data.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: data build
	@$(BUILD)/gradscope demo --data-dir data --out gradscope-runs

test: data build
	@cd $(BUILD) && GRADSCOPE_DATA_DIR=$(CURDIR)/data ctest --output-on-failure -j $(JOBS)

# Every benchmark program in bench/ (bench_<name> -> make bench-<name>).
BENCHES := $(patsubst bench/%_bench.cpp,%,$(wildcard bench/*_bench.cpp))

bench: $(addprefix bench-,$(BENCHES))

bench-%: configure
	@cmake --build $(BUILD) -j $(JOBS) --target bench_$*
	@$(BUILD)/bench/bench_$*

# Validation on MovieLens (r-cran-dslabs, installed on first use); docs/validation.md.
# validate-baseline: most popular against BPR tuned on a validation split.
# validate-faults: planted faults against the embedding findings, ground truth computed apart.
# validate-embedding: the auto-fix against no fix on the run where zombie rows are real.
validate: validate-baseline validate-faults validate-embedding

validate-%: configure
	@bash scripts/fetch-data.sh movielens
	@cmake --build $(BUILD) -j $(JOBS) --target validate_$*
	@$(BUILD)/bench/validate_$* data

clean:
	rm -rf $(BUILD)
