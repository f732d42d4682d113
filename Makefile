# edo — the two commands a new machine needs: `make demo` and `make test`.
# Both first run scripts/install-deps.sh (idempotent: installs only what is missing).
#
#   make build                 configure + build into build/ (BUILD=dir to change)
#   make test                  deps, build, then the whole test suite (ctest)
#   make demo                  deps, build, then record the bundled workload and report it
#   make bench                 build, then run the benchmarks (bench/) and print their ratios
#   make test SANITIZE=address,undefined   the same tests under sanitizers (in build-san/)
#   make gpu-bundle            deps, then the statically linked sm_90 build a lent GPU machine
#                              runs (build-gpu/; see scripts/gpu-bundle.sh)
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
DEMO_DB ?= out/demo.edodb

.PHONY: all deps configure build test demo bench gpu-bundle clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GENERATOR) -DEDO_SANITIZE="$(SANITIZE)" $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

demo: deps build
	@mkdir -p out
	scripts/demo.sh $(BUILD) $(DEMO_DB)

bench: build
	scripts/run-benchmarks.sh $(BUILD)

gpu-bundle: deps
	scripts/gpu-bundle.sh

clean:
	rm -rf $(BUILD)
