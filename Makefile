# OpenNDK: the two commands a new user runs (README):
#   make run    builds, then runs the main demo
#   make test   builds and runs the whole suite (gcc, clang+ASan+UBSan, clang+TSan, siw interop)
# Both install missing Debian packages when run as root (scripts/deps.sh) and say what to
# install otherwise.
BUILD   ?= build/release
FUZZ_SECONDS ?= 60
JOBS    ?= $(shell nproc)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps build run demo test test-quick test-interop install bench fuzz deb clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The demo: what a newcomer sees first.
run: build
	@scripts/demo.sh $(BUILD)

test:
	@scripts/deps.sh test
	@scripts/test-all.sh

# One configuration only, for a quick local loop: make test-quick [NDK_TEST_REGEX=...]
test-quick:
	@scripts/deps.sh test
	@NDK_TEST_CONFIGS=gcc scripts/test-all.sh

# Interop with Linux siw in a QEMU guest the harness builds (also part of make test when qemu can run).
test-interop: build
	@scripts/deps.sh interop
	@tests/interop/run.sh $(BUILD)

# Side-by-side benchmarks against the peers a user would pick (iperf3, sockperf, UCX, libfabric).
bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BUILD)

# The wire-layer fuzz targets (clang + libFuzzer), FUZZ_SECONDS each: executions and crashes per target.
fuzz:
	@scripts/deps.sh fuzz
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

install: build
	@cmake --install $(BUILD)

# Debian binary packages (debian/, dpkg-buildpackage) into build/deb; then: apt install ./build/deb/*.deb
deb:
	@scripts/deps.sh deb
	@scripts/deb.sh

clean:
	rm -rf build
