# edo — the two commands a new machine needs: `make demo` and `make test`.
# Both first run scripts/install-deps.sh (idempotent: installs only what is missing).
#
#   make build                 configure + build into build/ (BUILD=dir to change)
#   make test                  deps, build, then the whole test suite (ctest)
#   make demo                  deps, then builds only what the demo runs (the CMake target demo_targets)
#                              and shows the workflow: record, report, tune, export, apply_plan,
#                              dashboard pictures (scripts/demo.sh; files in DEMO_DIR, default out/demo)
#   make bench                 build, then run the benchmarks (bench/) and print their ratios
#   make test SANITIZE=address,undefined   the same tests under sanitizers (in build-san/)
#   make tsan                  the tracer's concurrency tests under ThreadSanitizer (build-tsan/;
#                              results to bench/results/<date>-tsan/)
#   make faults                the fault tests with FAULT_RUNS (default 50) kill runs per signal
#   make stress                build, then the suite STRESS_RUNS times (default 3) with more parallel
#                              tests than cores (STRESS_JOBS), STRESS_HOG busy loops beside it
#                              (default 0); lists which tests failed in which run (scripts/stress.sh)
#   make fuzz                  every libFuzzer target for FUZZ_SECONDS (default 300) each (tests/fuzz)
#   make screenshots           build, then regenerate docs/screenshots/ (edo-dashboard --screenshot)
#   make gpu-bundle            deps, then the statically linked sm_90 build a lent GPU machine
#                              runs (build-gpu/; see scripts/gpu-bundle.sh)
#   make torch-pypi            build, a venv with PyPI's current torch (scripts/torch-venv.sh, in
#                              $(BUILD)/torch-venv), then the PyTorch tests against it
#   make test also makes $(BUILD)/tokenizers-venv (scripts/tokenizers-venv.sh: PyPI's tokenizers
#                              over Debian's torch) for examples/gpt_bpe.py's tests
#   make torchrec              build, a venv with PyPI's torch, torchrec and fbgemm-gpu-cpu
#                              (scripts/torchrec-venv.sh, in $(BUILD)/torchrec-venv), then the
#                              TorchRec export checked by TorchRec's own sharding planner
#   make clean                 remove the build folder

SANITIZE ?=
ifeq ($(strip $(SANITIZE)),)
BUILD ?= build
else
BUILD ?= build-san
endif
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
EDO := $(BUILD)/bin/edo
DEMO_DIR ?= out/demo
FUZZ_SECONDS ?= 300
FAULT_RUNS ?= 50

.PHONY: all deps configure build test stress demo bench fuzz faults tsan screenshots gpu-bundle torch-pypi torchrec clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GENERATOR) -DEDO_SANITIZE="$(SANITIZE)" $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The fuzz tests' one-line results (executions, crashes, leaks) are printed after the suite;
# a file the tests left in the source tree fails the run.
test: deps build
	@rm -f $(BUILD)/fuzz-results/summary.txt
	@scripts/source-tree-check.sh before $(BUILD)/source-tree-before.txt
	@scripts/tokenizers-venv.sh $(BUILD)/tokenizers-venv || echo "make test: no tokenizers venv: the torch_gpt_bpe tests skip"
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600; status=$$?; \
	  if [ -f $(BUILD)/fuzz-results/summary.txt ]; then cat $(BUILD)/fuzz-results/summary.txt; fi; \
	  scripts/source-tree-check.sh after $(BUILD)/source-tree-before.txt || status=1; exit $$status

stress: deps build
	scripts/stress.sh $(BUILD)

# Only the demo's targets: the tests, benchmarks and the clang fuzz sub-build wait for `make test`.
demo: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target demo_targets
	scripts/demo.sh $(BUILD) $(DEMO_DIR)

bench: build
	scripts/run-benchmarks.sh $(BUILD)

fuzz: build
	tests/fuzz/run-all.sh $(BUILD) $(FUZZ_SECONDS)

faults: build
	EDO_FAULT_RUNS=$(FAULT_RUNS) $(BUILD)/bin/faults_tests

tsan: deps
	scripts/tsan-check.sh

screenshots: build
	scripts/screenshots.sh $(BUILD) docs/screenshots

gpu-bundle: deps
	scripts/gpu-bundle.sh

torch-pypi: build
	scripts/torch-venv.sh $(BUILD)/torch-venv
	EDO_TEST_PYTHON=$(abspath $(BUILD))/torch-venv/bin/python ctest --test-dir $(BUILD) -L torch -LE gpu --output-on-failure --timeout 600

torchrec: build
	scripts/torchrec-venv.sh $(BUILD)/torchrec-venv
	EDO_TORCHREC_PYTHON=$(abspath $(BUILD))/torchrec-venv/bin/python ctest --test-dir $(BUILD) -R torch_torchrec_real --output-on-failure --timeout 1800

clean:
	rm -rf $(BUILD)
