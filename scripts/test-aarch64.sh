#!/bin/sh
# The aarch64 build, proven under emulation, from a fresh Debian 12 x86-64
# machine:
#   1. install the cross compiler, qemu-user and the arm64 libraries the host
#      and the tests link (inih, CUnit) through multiarch (dpkg
#      --add-architecture arm64), when missing;
#   2. let the kernel run aarch64 programs through qemu (binfmt_misc), so the
#      tests that start the `anvil` CLI as a user would can do so;
#   3. configure with cmake/toolchains/aarch64-linux-gnu.cmake and build
#      everything (host, plugins incl. backend-neon, tests);
#   4. run the whole CUnit suite (ctest) under two emulated CPUs:
#        max         every extension: backend-neon's sdot and smmla paths
#        cortex-a53  ARMv8.0, no dotprod: the plain NEON path
#      (not the oracle parity: ggml is x86-64 only; not the 2 GiB transcode:
#      minutes of emulation for what the native run proves) and show `anvil plugins` (which variant was chosen, and why) for each;
#   5. run `anvil bench` once as a smoke test. Its figures are emulated
#      instructions per second: NOT speeds, never to be quoted as such.
#
# Usage: scripts/test-aarch64.sh [build-dir]      (default: build-aarch64)
# Environment: JOBS (default nproc), ANVIL_NEON_ROWS (rows per format and
# variant in tests/neon, default 10000), QEMU_CPUS (default "max cortex-a53").
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build-aarch64}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
QEMU_CPUS=${QEMU_CPUS:-"max cortex-a53"}
TOOLCHAIN="$ROOT/cmake/toolchains/aarch64-linux-gnu.cmake"
START=$(date +%s)

say() { printf '\n== %s\n' "$*"; }

case "$(uname -m)" in
x86_64) ;;
aarch64 | arm64)
    echo "test-aarch64: this machine is aarch64: the ordinary build and ctest cover backend-neon natively"
    exit 0
    ;;
*)
    echo "test-aarch64: this script cross-builds from x86-64 (this machine is $(uname -m))" >&2
    exit 1
    ;;
esac

# ---- 1. packages ---------------------------------------------------------------
NATIVE="build-essential cmake pkg-config gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user qemu-user-binfmt"
ARM64="libc6:arm64 libinih-dev:arm64 libcunit1-dev:arm64"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
missing=""
for p in $NATIVE $ARM64; do
    installed "$p" || missing="$missing $p"
done
has_arm64=0
dpkg --print-foreign-architectures | grep -qx arm64 && has_arm64=1
if [ -n "$missing" ] || [ $has_arm64 -eq 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "test-aarch64: missing:$missing (arm64 multiarch: $has_arm64)" >&2
        echo "test-aarch64: as root: dpkg --add-architecture arm64 && apt-get update && apt-get install -y$missing" >&2
        exit 1
    fi
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    [ $has_arm64 -eq 1 ] || dpkg --add-architecture arm64
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# ---- 2. binfmt_misc: aarch64 programs started by the tests -----------------------
# ctest runs each test program through qemu itself (the toolchain's
# CMAKE_CROSSCOMPILING_EMULATOR); tests that start the aarch64 `anvil` CLI
# from a shell need the kernel to hand it to qemu. Registering the handler
# Debian ships (qemu-user-binfmt) only affects aarch64 ELF files.
BINFMT=/proc/sys/fs/binfmt_misc
binfmt_ok=0
if [ -e "$BINFMT/qemu-aarch64" ]; then
    binfmt_ok=1
elif [ "$(id -u)" -eq 0 ]; then
    [ -e "$BINFMT/register" ] || mount -t binfmt_misc binfmt_misc "$BINFMT" 2>/dev/null || true
    if [ -e "$BINFMT/register" ] && [ -r /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
        cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$BINFMT/register" 2>/dev/null || true
    fi
    [ -e "$BINFMT/qemu-aarch64" ] && binfmt_ok=1
fi
# Without it, the five tests that start the CLI cannot run (the aarch64
# binary is not executable on this kernel); everything else still does.
# The kill/fault-injection loops over split sets test the host's filesystem
# protocol, not the architecture (and LD_PRELOAD through binfmt is fragile):
# they run in the native build only.
# The README's examples and the keep/atomic-output loops run the same host
# code through the CLI on any CPU: about 200 s of qemu time for nothing the
# native run does not prove. The sensitivity suites (test_quantize_sens,
# quantize_sens_cli: 2 s and 5 s natively, 113 s and over 300 s emulated)
# re-run the forward pass dozens of times per tensor: host code whose
# aarch64 arithmetic test_model and test_imat prove here. test_quantize_target
# (the --target-size allocator and a plan of the trained model: 2 s natively,
# 151 s emulated) is host code too, with no CPU-dependent path, as are
# cli_suite (every command's arguments, messages and JSON: 91 s emulated)
# and transcode_cli (32 s): test_cli, gguf_cli, safetensors_cli and
# neon_cli_plugins still start the aarch64 CLI here. hf_memory bounds the
# CLI's peak RSS, which under qemu-user also holds the emulator's own
# memory (~15 MB more): its bounds are for the native run.
EXCLUDE="^(harden_split_atomic|harden_quantize_keep_split_atomic|readme_examples|test_quantize_sens|quantize_sens_cli|test_quantize_target|cli_suite|transcode_cli|hf_memory)$"
if [ $binfmt_ok -eq 1 ]; then
    say "binfmt_misc: aarch64 programs run through $(sed -n 's/^interpreter //p' "$BINFMT/qemu-aarch64")"
else
    EXCLUDE="^(test_cli|test_registry|test_third_party|test_config_trust|gguf_cli|safetensors_cli|harden_split_atomic|harden_quantize_keep_split_atomic|readme_examples|test_quantize_sens|quantize_sens_cli|test_quantize_target|cli_suite|transcode_cli|hf_memory)$"
    say "binfmt_misc unavailable (not root, or no binfmt_misc): skipping the tests that start the CLI: $EXCLUDE"
fi

# ---- 3. configure and build ----------------------------------------------------------
say "configure $BUILD (aarch64-linux-gnu)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DCMAKE_BUILD_TYPE=Release >/dev/null
say "build (-j$JOBS)"
cmake --build "$BUILD" -j"$JOBS" >"$BUILD/build.log" 2>&1 || { tail -50 "$BUILD/build.log"; exit 1; }
# e_machine (bytes 18-19 of the ELF header) is 183 (0xb7) for aarch64.
[ "$(od -An -tx1 -j18 -N2 "$BUILD/bin/anvil" | tr -d ' ')" = "b700" ] || {
    echo "test-aarch64: $BUILD/bin/anvil is not an aarch64 program" >&2
    exit 1
}

# ---- 4. tests under each CPU model -------------------------------------------------
# The oracle tests need ggml's x86 libraries: not part of an aarch64 run.
export CMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" # for the nested build in test_third_party
status=0
# The first CPU model runs every suite; the others only the suites whose
# code paths depend on the CPU's features (labels neon and portable): the
# rest is the same aarch64 code again (about 200 s of qemu time saved).
# tests/neon runs every variant the CPU has, so the first model (max)
# already ran the plain path on the full rows; the later ones check the
# variant their features select, on a quarter of the rows (60 s saved).
SUITES="-LE oracle|big"
NEON_ROWS=${ANVIL_NEON_ROWS:-10000}
for cpu in $QEMU_CPUS; do
    say "ctest under qemu-aarch64 -cpu $cpu ($SUITES)"
    export QEMU_CPU="$cpu"
    ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS" $SUITES -E "$EXCLUDE" || status=1
    SUITES="-L neon|portable"
    ANVIL_NEON_ROWS=$((NEON_ROWS / 4))
    export ANVIL_NEON_ROWS
    say "anvil plugins under -cpu $cpu"
    qemu-aarch64 -cpu "$cpu" "$BUILD/bin/anvil" --config "$BUILD/etc/anvil/anvil.ini" plugins >"$BUILD/plugins-$cpu.txt" ||
        status=1
    grep -E "^(cpu|features):|backend-(neon|scalar) |^  (neon|scalar) |^  type |^  (q4_K|q8_0|q6_K|tq2_0|iq2_xs) " \
        "$BUILD/plugins-$cpu.txt" || status=1
done
unset QEMU_CPU

# ---- 5. bench smoke test -----------------------------------------------------------------
say "anvil bench smoke test under qemu -cpu max (emulated: the figures are not speeds)"
qemu-aarch64 -cpu max "$BUILD/bin/anvil" --config "$BUILD/etc/anvil/anvil.ini" bench --no-ggml \
    --type q4_K --type q8_0 --type q6_K --type tq2_0 --rows 256 --k 2048 --iters 1 || status=1

say "test-aarch64: $([ $status -eq 0 ] && echo PASSED || echo FAILED) in $(($(date +%s) - START)) s"
exit $status
