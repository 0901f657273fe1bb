#!/bin/sh
# Install what anvil needs on Debian 12, or -- when not root -- print the
# exact apt line and stop.
#
#   scripts/setup-deps.sh demo   what `make demo` needs: a C compiler, CMake,
#                                pkg-config and inih (libanvil, the CLI, the plugins)
#   scripts/setup-deps.sh        what `make test` needs on top: CUnit, SIMDe,
#                                valgrind, clang + libFuzzer, clang-format (14:
#                                scripts/check-format.sh), GNU time, node/npm
#                                (the ggml oracle comes from npm), python3 (the CLI
#                                suite makes a UNIX socket with it), and Debian's
#                                PyTorch/numpy/sentencepiece/tqdm/yaml (tests/hf runs
#                                llama.cpp's convert_hf_to_gguf.py through them)
set -eu

DEMO_PKGS="gcc make libc6-dev cmake pkg-config libinih-dev"
TEST_PKGS="build-essential $DEMO_PKGS libcunit1-dev libsimde-dev valgrind clang libclang-rt-14-dev clang-format time nodejs npm
python3 python3-torch python3-numpy python3-sentencepiece python3-tqdm python3-yaml"
# (the aarch64 cross toolchain and qemu are installed by scripts/test-aarch64.sh)

case "${1:-test}" in
    demo) PKGS=$DEMO_PKGS ;;
    test) PKGS=$TEST_PKGS ;;
    *) echo "usage: scripts/setup-deps.sh [demo|test]" >&2; exit 2 ;;
esac

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        # node/npm may come from elsewhere (nodesource, nvm): accept the commands.
        case "$p" in
            nodejs) command -v node >/dev/null 2>&1 && continue ;;
            npm) command -v npm >/dev/null 2>&1 && continue ;;
        esac
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "anvil: missing packages:$missing" >&2
    echo "anvil: install them with:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi

echo "anvil: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
