# The README commands: `make run` (the main job), `make test` (every test) and `make bench` (normlab
# beside PyTorch). Each installs the missing Debian packages, configures and builds first; only
# `make bench` installs the benchmark's packages (Google Benchmark, OpenBLAS, PyTorch), and only
# `make docs` (the API reference) Doxygen and Graphviz.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps bench-deps fuzz-deps docs-deps configure build run test deb docs demo bench bench-python bench-dist fuzz-build fuzz sanitize clean

all: build

deps:
	@bash scripts/install-deps.sh

bench-deps:
	@bash scripts/install-deps.sh --bench

fuzz-deps:
	@bash scripts/install-deps.sh --fuzz

docs-deps:
	@bash scripts/install-deps.sh --docs

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

# A Debian package of the command, the libraries, their headers, the CMake package and normlab.pc
# (CPack: cmake/Install.cmake), written as $(BUILD_DIR)/normlab_<version>_<arch>.deb; install it
# with apt-get install ./$(BUILD_DIR)/normlab_*.deb.
deb: build
	cd $(BUILD_DIR) && cpack -G DEB

# The API reference: HTML from the /// comments of the public headers of autograd/, nn/, optim/
# and data/ (Doxygen, docs/Doxyfile; scripts/build-docs.sh) in $(BUILD_DIR)/docs/html. Doxygen's
# warnings are errors: an undocumented public class or function fails it. No CMake build needed.
docs: docs-deps
	@bash scripts/build-docs.sh $(BUILD_DIR)/docs

# The benchmark (bench/run.sh): the kernel and training-step table, one epoch of Fashion-MNIST
# (bench/epoch.sh) and the sweep protocol (bench/protocol.sh), normlab beside PyTorch; narrow it
# with PARTS, FILTER, THREADS, ... (bench/README.md). The benchmark's packages come first, so that
# the configure step finds Google Benchmark.
bench: bench-deps
	@$(MAKE) --no-print-directory build
	BUILD_DIR=$(BUILD_DIR) bash bench/run.sh

# The Python overhead benchmark (bench/python_bench.py): the MLP training step driven from Python
# with normlab's package and with PyTorch eager, beside the same step in C++ (THREADS=1 by default).
bench-python: bench-deps
	@$(MAKE) --no-print-directory build
	PYTHONPATH=$(BUILD_DIR)/python /usr/bin/python3 bench/python_bench.py --threads $${THREADS:-1} \
	  --bench-kernels $(BUILD_DIR)/bench/bench_kernels $${MARKDOWN:+--markdown}

# The data-parallel benchmark (bench/dist/run.sh): gradient allreduce and the training step over
# mpirun -np 2 beside PyTorch's gloo DistributedDataParallel, and the distributed sweep's wall time.
bench-dist: bench-deps
	@$(MAKE) --no-print-directory build
	BUILD_DIR=$(BUILD_DIR) bash bench/dist/run.sh

# Fuzzing (fuzz/): clang builds the libraries with libFuzzer's coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer in $(FUZZ_DIR) (-O1, line tables for the reports); `make fuzz` runs
# each harness for FUZZ_SECONDS.
fuzz-build: fuzz-deps
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
	  -DCMAKE_CXX_COMPILER=clang++ -DNORMLAB_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/run.sh $(FUZZ_DIR)

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer: the sanitize preset
# (CMakePresets.json: -O1 with line tables only (-g1: the reports' file:line, and a build about half
# as long as with -g), in build-sanitize; Highway compiles its SCALAR, AVX2 and AVX3 targets only
# (HWY_DISABLED_TARGETS=6144 drops SSSE3 and SSE4, whose kernels the release suite still checks),
# for a shorter build; the debug preset has every target at -O0 with full debug info). Its tests
# leave out install/deb (the Debian package's contents: make test checks them, and install/consumer
# still installs this build and runs a program linked against it) and docs/doctest (the documented
# commands' output, which make test checks; their code runs sanitized in the cli/ tests).
sanitize: deps
	@cmake --preset sanitize >/dev/null
	@cmake --build --preset sanitize -j $(JOBS)
	ctest --preset sanitize -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) build-debug build-sanitize
