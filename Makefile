# The README commands: `make run` (the main job), `make test` (every test) and `make bench` (normlab
# beside PyTorch). Each installs the missing Debian packages, configures and builds first; only
# `make bench` installs the benchmark's packages (Google Benchmark, OpenBLAS, PyTorch).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps bench-deps configure build run test demo bench clean

all: build

deps:
	@bash scripts/install-deps.sh

bench-deps:
	@bash scripts/install-deps.sh --bench

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/experiments/normlab study --out out/study

demo: build
	$(BUILD_DIR)/experiments/normlab demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The benchmark (bench/run.sh): the kernel and training-step table, one epoch of Fashion-MNIST
# (bench/epoch.sh) and the sweep protocol (bench/protocol.sh), normlab beside PyTorch; narrow it
# with PARTS, FILTER, THREADS, ... (bench/README.md). The benchmark's packages come first, so that
# the configure step finds Google Benchmark.
bench: bench-deps
	@$(MAKE) --no-print-directory build
	BUILD_DIR=$(BUILD_DIR) bash bench/run.sh

clean:
	rm -rf $(BUILD_DIR)
