# kctx — top-level entry points. CMake does the building; this file only
# sequences it. See docs/building.md.
#
#   make demo    install missing packages, build, run the sim demonstration
#   make test    install missing packages, check the C sources' format,
#                build and test three flavours: normal, ASan+UBSan, TSan
#
# CC=clang (or any C compiler) selects the compiler; it is passed to CMake.

SHELL := /bin/bash
.DEFAULT_GOAL := build

CMAKE     ?= cmake
CTEST     ?= ctest
GENERATOR ?= Ninja
BUILD_TYPE ?= RelWithDebInfo
JOBS      ?= 2
CTEST_TIMEOUT ?= 300
# Extra arguments for each flavour's ctest run (e.g. TSAN_CTEST_ARGS="-L concurrency").
CTEST_ARGS ?=
ASAN_CTEST_ARGS ?=
TSAN_CTEST_ARGS ?=

BUILD_DIR      := build
ASAN_BUILD_DIR := build-asan
TSAN_BUILD_DIR := build-tsan

# Only pass a compiler when the user chose one; make's built-in default
# ("cc") leaves the choice to CMake.
ifneq ($(filter environment command line,$(origin CC)),)
CMAKE_CC := -DCMAKE_C_COMPILER=$(CC)
endif
CMAKE_CONFIGURE = $(CMAKE) -S . -G $(GENERATOR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_CC)

# `deps` runs scripts/install-deps.sh once per machine and per version of the
# script: the stamp's name carries the script's hash. The script exits 3 when
# something is missing that it could not install; that is a warning (the
# build may still work) and no stamp is written, so the next run tries again.
DEPS_SCRIPT := scripts/install-deps.sh
DEPS_HASH   := $(shell sha256sum $(DEPS_SCRIPT) 2>/dev/null | cut -c1-16)
DEPS_STAMP  := $(BUILD_DIR)/.deps-$(DEPS_HASH).stamp

# Sanitizer run-time settings for the test runs.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

CTEST_RUN = $(CTEST) --output-on-failure -j$(JOBS) --timeout $(CTEST_TIMEOUT) --no-tests=error

.PHONY: all deps build build-asan build-tsan build-release test test-normal test-asan test-tsan test-release \
        demo bench clean format format-check help

all: build

help:
	@echo "make demo         install deps, build, run the sim demonstration"
	@echo "make test         install deps, build and test: normal, ASan+UBSan, TSan"
	@echo "make build        configure and build ($(BUILD_DIR)/)"
	@echo "make build-asan   ASan+UBSan build ($(ASAN_BUILD_DIR)/)"
	@echo "make build-tsan   TSan build ($(TSAN_BUILD_DIR)/)"
	@echo "make bench        build and run every kctx_bench_* in $(BUILD_DIR)/bench"
	@echo "make deps         install missing Debian/PyPI packages (once per machine)"
	@echo "make format-check clang-format check of the C sources"
	@echo "make clean        remove the build directories"

# The sub-makes of `test` get KCTX_DEPS_DONE=1: the script ran once already.
ifeq ($(KCTX_DEPS_DONE),1)
deps: ;
else
deps: $(DEPS_STAMP)
endif

$(DEPS_STAMP): $(DEPS_SCRIPT)
	@mkdir -p $(BUILD_DIR)
	@rc=0; bash $(DEPS_SCRIPT) || rc=$$?; \
	if [ $$rc -eq 0 ]; then \
	    rm -f $(BUILD_DIR)/.deps-*.stamp; touch $@; \
	elif [ $$rc -eq 3 ]; then \
	    echo "make: some packages are missing; continuing (see above)"; \
	else \
	    echo "make: $(DEPS_SCRIPT) failed (exit $$rc)"; exit $$rc; \
	fi

build: deps
	$(CMAKE_CONFIGURE) -B $(BUILD_DIR) -DKCTX_WERROR=ON
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps
	$(CMAKE_CONFIGURE) -B $(ASAN_BUILD_DIR) -DKCTX_SANITIZE=address -DKCTX_WERROR=ON
	$(CMAKE) --build $(ASAN_BUILD_DIR) -j $(JOBS)

build-tsan: deps
	$(CMAKE_CONFIGURE) -B $(TSAN_BUILD_DIR) -DKCTX_SANITIZE=thread -DKCTX_WERROR=ON
	$(CMAKE) --build $(TSAN_BUILD_DIR) -j $(JOBS)

# Release builds with both compilers, warnings as errors (compile only: the
# tests run in the three flavours above). gcc and clang warn differently at
# -O3 (clang's -Wfor-loop-analysis, gcc's -Wstringop-* and -Wmaybe-uninitialized),
# so `make test` builds both and a Release-only warning cannot return.
RELEASE_COMPILERS ?= gcc clang

build-release: deps
	@for cc in $(RELEASE_COMPILERS); do \
	    echo "==== build: Release with $$cc (build-release-$$cc) ===="; \
	    $(CMAKE) -S . -G $(GENERATOR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$$cc \
	        -B build-release-$$cc -DKCTX_WERROR=ON >/dev/null || exit 1; \
	    $(CMAKE) --build build-release-$$cc -j $(JOBS) || exit 1; \
	done

test-release: build-release

test-normal: build
	@echo "==== tests: normal build ($(BUILD_DIR)) ===="
	cd $(BUILD_DIR) && $(CTEST_RUN) $(CTEST_ARGS)

test-asan: build-asan
	@echo "==== tests: ASan+UBSan build ($(ASAN_BUILD_DIR)) ===="
	cd $(ASAN_BUILD_DIR) && $(ASAN_ENV) $(CTEST_RUN) $(ASAN_CTEST_ARGS)

test-tsan: build-tsan
	@echo "==== tests: TSan build ($(TSAN_BUILD_DIR)) ===="
	cd $(TSAN_BUILD_DIR) && $(TSAN_ENV) $(CTEST_RUN) $(TSAN_CTEST_ARGS)

# Every flavour runs even when an earlier one failed, so one run shows all
# failures; the exit status is non-zero if any flavour failed (build or test).
test: deps
	@failed=""; \
	$(MAKE) --no-print-directory format-check >/dev/null 2>&1 || { \
	    $(MAKE) --no-print-directory format-check 2>&1 | tail -20; failed=" format-check"; }; \
	for flavour in normal asan tsan release; do \
	    $(MAKE) --no-print-directory KCTX_DEPS_DONE=1 test-$$flavour || failed="$$failed $$flavour"; \
	done; \
	if [ -n "$$failed" ]; then \
	    echo "make test: FAILED flavours:$$failed"; exit 1; \
	fi; \
	echo "make test: all flavours passed (normal, asan, tsan; Release builds: $(RELEASE_COMPILERS))"

# The serving scenario on the sim (docs/cli.md, `kctx demo`): prints its
# report and exits non-zero on any failure.
demo: build
	./$(BUILD_DIR)/tools/kctx/kctx demo

# Builds everything (benchmarks included) and runs every kctx_bench_*
# executable found in $(BUILD_DIR)/bench, in name order.
bench: build
	@benches=$$(find $(BUILD_DIR)/bench -maxdepth 2 -type f -executable -name 'kctx_bench_*' 2>/dev/null | sort); \
	if [ -z "$$benches" ]; then echo "make bench: no kctx_bench_* executables in $(BUILD_DIR)/bench"; exit 0; fi; \
	rc=0; \
	for b in $$benches; do \
	    echo "==== $$b ===="; \
	    ./$$b || { echo "make bench: $$b failed"; rc=1; }; \
	done; \
	exit $$rc

# Sources that belong to the project (tracked or not yet added, not ignored).
FORMAT_FILES = $(shell git ls-files --cached --others --exclude-standard -- '*.c' '*.h' 2>/dev/null)

format-check:
	@command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 1; }
	clang-format --dry-run --Werror $(FORMAT_FILES)

format:
	clang-format -i $(FORMAT_FILES)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR) build-release-*
