# Thin wrapper over CMake. `make demo` and `make test` install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
PREFIX ?= /usr/local

.PHONY: all deps configure build demo run test test-sanitize test-tsan test-arm64 \
	check-thread-safety fuzz soak bench bench-zoo install deb clean format phone-models zoo

all: build

deps:
	@./scripts/install-deps

$(BUILD)/build.ninja:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job end to end: start pschedd, add a model, plan it, run it, stop. Builds only
# the two programs it runs.
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target pschedd pschedctl
	./scripts/demo.sh $(BUILD)

# Run pschedd in the foreground on a private socket and state dir.
run: build
	./scripts/run-daemon.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# clang -Wthread-safety over every unit that sees a lock annotation (docs/concurrency.md).
check-thread-safety: build
	./scripts/check-thread-safety $(BUILD)

test-sanitize:
	@$(MAKE) --no-print-directory BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DPSCHED_SANITIZE=ON" test

# ThreadSanitizer (clang, build-tsan) over the tests of the threaded code; any report fails it
# (docs/concurrency.md).
test-tsan: deps
	JOBS=$(JOBS) ./scripts/test-tsan build-tsan

# arm64 (docs/boards.md): cross build with Debian multiarch, then the unit tests and a daemon
# end to end (scripts/arm64-e2e.sh) under qemu-user. Left out there: tests that start arm64
# programs from inside a test (the daemon tests and the Python client's; that needs qemu's
# binfmt_misc entry, which containers lack - the end to end script runs both programs under
# qemu itself), the Debian package test, and the calibration tests that need a time budget
# to yield a minimum number of samples (under emulation an op runs ~100x slower, so 0.5 s
# times 2-4 ops), and the feedback engine test (emulated runs are ~115x their prediction,
# beyond the 20x a residual factor may correct). OpenCL tests skip: no arm64 OpenCL driver.
ARM64_BUILD ?= build-arm64
ARM64_SKIP_LABELS ?= python|packaging
ARM64_SKIP_TESTS ?= ^DaemonTest\.|^FeedbackEngineTest\.|^CalibrateTest\.TinyRunOnOneCoreFitsAUsefulModel$$|^psched_calibrate_(runs|refits)$$
test-arm64:
	@./scripts/install-deps --arch arm64
	cmake -S . -B $(ARM64_BUILD) -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
	  $(CMAKE_FLAGS)
	cmake --build $(ARM64_BUILD) -j $(JOBS)
	cd $(ARM64_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 \
	  -LE '$(ARM64_SKIP_LABELS)' -E '$(ARM64_SKIP_TESTS)'
	./scripts/arm64-e2e.sh $(ARM64_BUILD)

# libFuzzer over every parser of untrusted bytes (fuzz/), clang + ASan + UBSan.
FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 1
FUZZ_RUNS ?= 0
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPSCHED_FUZZ=ON
	cmake --build build-fuzz --target fuzzers -j $(JOBS)
	./scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_SEED) $(FUZZ_RUNS)

# A bounded soak of the real daemon: concurrent clients and model churn, RSS and fds sampled.
SOAK_SECONDS ?= 180
SOAK_CLIENTS ?= 4
soak: build
	./scripts/soak.sh $(BUILD) $(SOAK_SECONDS) $(SOAK_CLIENTS)

bench: build
	./scripts/bench.sh $(BUILD)

# Real architectures through pschedd (tools/zoo/README.md): torchvision's classifiers and a
# few transformer models exported with seeded random weights into $(BUILD)/zoo (only those
# its manifest lacks; ZOO_SET=fast|transformers|all), then each of the set imported, planned,
# run and compared with PyTorch's output. ZOO_ARGS go to run_zoo.py, e.g.
# ZOO_ARGS="--ort-venv build/ort-venv" to time ONNX Runtime too (a venv made from PyPI).
ZOO_SET ?= fast
zoo: build
	-/usr/bin/python3 tools/zoo/export_zoo.py --out $(BUILD)/zoo --set $(ZOO_SET) \
	  --jobs $(JOBS) --skip-existing
	/usr/bin/python3 tools/zoo/run_zoo.py $(BUILD)/zoo --build $(BUILD) --set $(ZOO_SET) \
	  $(ZOO_ARGS)

# pschedd as it ships (default config, first-start calibration, through gRPC) against ONNX
# Runtime 1 and 2 threads on the zoo's `bench` set: one table of medians over interleaved
# rounds with their spread (tools/zoo/bench_zoo.py; the ONNX Runtime venv comes from PyPI).
ORT_VENV ?= $(BUILD)/ort-venv
bench-zoo: build
	-/usr/bin/python3 tools/zoo/export_zoo.py --out $(BUILD)/zoo --set bench \
	  --jobs $(JOBS) --skip-existing
	/usr/bin/python3 tools/zoo/bench_zoo.py $(BUILD)/zoo --build $(BUILD) \
	  --ort-venv $(ORT_VENV) $(BENCH_ZOO_ARGS)

# Retrains the data-backed platforms' GBDT model files (predictor/models) from the phone
# measurements; deterministic, so an unchanged tree reproduces them byte for byte.
SHARED ?= ../shared
phone-models: configure
	cmake --build $(BUILD) --target psched-train
	$(BUILD)/tools/psched_train/psched-train phone-models \
	  --data $(SHARED)/data/mobile-ml-benchmark --out-dir predictor/models

install: build
	./scripts/install.sh $(BUILD) $(PREFIX)

# Debian packages of this build's architecture into $(BUILD)/deb (docs/packaging.md). A cross
# build passes its own BUILD and CMAKE_FLAGS (-DCMAKE_TOOLCHAIN_FILE=...).
deb: build
	./packaging/build-deb.sh $(BUILD)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
