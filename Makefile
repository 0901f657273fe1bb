# anvil — thin front end over CMake.
#
#   make demo   install what the demo needs (compiler, CMake, pkg-config, inih),
#               build libanvil + the CLI + the plugins only (Release), run the demo
#   make test   install what is missing (incl. the ggml oracle), build, run every
#               test: CUnit suites (ctest), the ggml parity program, the
#               quality benchmark (KL divergence of presets by llama.cpp, a few
#               chunks), the unit suites again under ASan+UBSan, and the
#               libFuzzer targets for a bounded time (clang build, which also proves clang builds clean),
#               the thread tests under ThreadSanitizer,
#               and the aarch64 build under qemu (backend-neon); first of all
#               `make format-check`: the C sources against .clang-format
#               (scripts/check-format.sh; --fix rewrites them) and the paths
#               comments cite (scripts/check-paths.py)

BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
TSAN_BUILD  ?= build-tsan
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
ORACLE_DIR  := $(CURDIR)/$(BUILD)/oracle
ORACLE_LIB  := $(ORACLE_DIR)/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
PARITY_ROWS ?= 10000
# The SIMD backend suites check 10,000 rows per format in the release build;
# under ASan (10-20x slower) they look for memory errors, not rounding: a
# bounded sample keeps the pass inside ctest's timeout on 2 cores (the
# portable encoders too: 10,000 rows took 340 s under ASan, the release
# build checks all 10,000). 1,000 rows still meet every input kind many
# times over (the kinds cycle every 16 rows): 2,000 cost 200 s of a 2-core
# budget for the same memory checks.
ASAN_SIMD_ROWS ?= 1000
# Seconds per libFuzzer target in `make fuzz` (14 targets on 2 cores).
FUZZ_SECONDS ?= 20
# The fuzz build compiles only what `ctest -L fuzz` runs: each libFuzzer
# target and its replay over the seeds (a new fuzz target is added here).
FUZZ_TARGETS = fuzz_gguf fuzz_gguf_replay fuzz_config fuzz_config_replay fuzz_journal fuzz_journal_replay \
  fuzz_imatrix fuzz_imatrix_replay fuzz_quantize_args fuzz_quantize_args_replay \
  fuzz_safetensors fuzz_safetensors_replay fuzz_tokenize fuzz_tokenize_replay fuzz_tokens fuzz_tokens_replay \
  fuzz_hf_card fuzz_hf_card_replay fuzz_hf_tokenizer_json fuzz_hf_tokenizer_json_replay fuzz_hf_spm fuzz_hf_spm_replay \
  fuzz_imat fuzz_imat_replay fuzz_hf_folder fuzz_hf_folder_replay \
  fuzz_sens fuzz_sens_replay
# The SIMDe-emulated AVX-512 build (slow to compile) runs backend-avx512's
# kernels where the CPU has no AVX-512. On a CPU that has it, test_avx512
# runs them natively (10,000 rows, and under ASan), so the emulation is left
# out there (about 5 minutes of a 2-core budget); AVX512_EMU=ON forces it.
AVX512_EMU  ?= $(if $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes),OFF,ON)

.PHONY: all demo test format-check deps oracle build unit big converter parity quality asan tsan fuzz test-aarch64 clean

all: build

deps:
	@scripts/setup-deps.sh

oracle: deps
	@scripts/setup-oracle.sh "$(ORACLE_DIR)"

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DANVIL_BUILD_TESTS=ON \
	  -DANVIL_AVX512_EMU=$(AVX512_EMU) -DANVIL_ORACLE_DIR="$(ORACLE_LIB)" \
	  -DANVIL_HF_LLAMA_SRC="$(ORACLE_DIR)/llama.cpp"
	cmake --build $(BUILD) -j$(JOBS)

# Only what a user runs: no test suites, no SIMDe emulation, no oracle.
# (The same build folder as `make test`, which turns the tests back on.)
demo:
	@scripts/setup-deps.sh demo
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DANVIL_BUILD_TESTS=OFF
	cmake --build $(BUILD) -j$(JOBS) --target runtime
	$(BUILD)/bin/anvil plugins
	@echo
	$(BUILD)/bin/anvil demo
	@echo
	$(BUILD)/bin/anvil demo --model

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -LE 'oracle|big|converter'

# Every generated checkpoint of a class through llama.cpp's real
# convert_hf_to_gguf.py (label converter: minutes of Python a class; make
# test runs the committed pairs the converter wrote, and hf_moe's reduced set).
converter: build oracle
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L converter

# The >= 2 GiB transcode under a 256 MiB RSS cap (part of `make test`).
big: build
	ctest --test-dir $(BUILD) --output-on-failure -L big

parity: build oracle
	$(BUILD)/bin/anvil-parity --require-oracle --rows $(PARITY_ROWS) --oracle "$(ORACLE_LIB)"

# The quality benchmark's bounded run (tests/quality/test_quality.c): KL
# divergence of anvil's presets of the trained test model, by llama.cpp.
QUALITY_CTEST = ANVIL_REQUIRE_ORACLE=1 ctest --test-dir $(BUILD) --output-on-failure -L '^quality$$'

quality: build oracle
	$(QUALITY_CTEST)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DANVIL_SANITIZE=ON -DANVIL_AVX512_EMU=OFF -DANVIL_ORACLE_DIR="$(ORACLE_LIB)"
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ANVIL_AVX2_TEST_ROWS=$(ASAN_SIMD_ROWS) ANVIL_AVX512_TEST_ROWS=$(ASAN_SIMD_ROWS) \
	  ANVIL_PORTABLE_ENC_ROWS=$(ASAN_SIMD_ROWS) \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -L unit

# Contexts opened, used and closed from many threads, a shared context's
# matmuls, plugin init/deinit: under ThreadSanitizer. Only what that test
# needs is built (the library, three plugins, the test).
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DANVIL_TSAN=ON -DANVIL_AVX512_EMU=OFF
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target test_lifetime
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir $(TSAN_BUILD) --output-on-failure -R '^test_lifetime$$'

fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DANVIL_FUZZ=ON -DANVIL_BUILD_TESTS=ON -DANVIL_AVX512_EMU=OFF \
	  -DANVIL_FUZZ_SMOKE_SECONDS=$(FUZZ_SECONDS)
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(FUZZ_TARGETS)
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -j$(JOBS) -L fuzz

# backend-neon: cross-built for aarch64, every suite run under qemu-user with
# and without the dot-product extension (installs its own cross packages).
test-aarch64:
	@scripts/test-aarch64.sh build-aarch64

# Cheap, so first: the sources as .clang-format lays them out, and every
# repository path a comment or a Markdown file cites exists.
format-check: deps
	scripts/check-format.sh
	python3 scripts/check-paths.py

# Each stage says how long it took (scripts/stage.sh): the budget is 35
# minutes on a fresh 2-core machine, setup included.
STAGE = scripts/stage.sh

test:
	@$(STAGE) format-check $(MAKE) --no-print-directory format-check
	@$(STAGE) setup $(MAKE) --no-print-directory oracle
	@$(STAGE) build $(MAKE) --no-print-directory build
	@$(STAGE) ctest ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -LE 'oracle|converter'
	@$(STAGE) parity scripts/parity-split.sh $(BUILD)/bin/anvil-parity --require-oracle --rows $(PARITY_ROWS) --oracle "$(ORACLE_LIB)"
	@$(STAGE) quality env $(QUALITY_CTEST)
	@$(STAGE) asan $(MAKE) --no-print-directory asan
	@$(STAGE) tsan $(MAKE) --no-print-directory tsan
	@$(STAGE) fuzz $(MAKE) --no-print-directory fuzz
	@$(STAGE) aarch64 $(MAKE) --no-print-directory test-aarch64

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) build-aarch64
