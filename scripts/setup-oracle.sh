#!/bin/sh
# Install ggml (the parity oracle) from npm into the build tree:
#   $1/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so
# and the llama.cpp source tree of that build (node-llama-cpp@3.22.1's git
# bundle), whose convert_hf_to_gguf.py tests/hf runs for its generated cases:
#   $1/llama.cpp/convert_hf_to_gguf.py
set -eu
DIR="$1"
PKG="@node-llama-cpp/linux-x64@3.22.1"
LIB="$DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"
SRC="$DIR/llama.cpp"

llama_source() {
    [ -f "$SRC/convert_hf_to_gguf.py" ] && return 0
    command -v git >/dev/null 2>&1 || { echo "anvil: git not found: the llama.cpp source (tests/hf) is not unpacked" >&2; return 0; }
    tmp=$(mktemp -d)
    echo "anvil: unpacking the llama.cpp source of the oracle (node-llama-cpp@3.22.1) into $SRC"
    (cd "$tmp" && npm pack --silent node-llama-cpp@3.22.1 >/dev/null &&
        tar xzf node-llama-cpp-3.22.1.tgz package/llama/gitRelease.bundle) &&
        rm -rf "$SRC" && git clone -q "$tmp/package/llama/gitRelease.bundle" "$SRC" 2>/dev/null
    rm -rf "$tmp"
    [ -f "$SRC/convert_hf_to_gguf.py" ] || { echo "anvil: the llama.cpp source could not be unpacked into $SRC" >&2; exit 1; }
}

if [ -f "$LIB" ]; then
    llama_source
    exit 0
fi
if [ "$(uname -m)" != "x86_64" ]; then
    echo "anvil: the ggml oracle package is x86-64 only; parity checks need an x86-64 machine" >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "anvil: npm not found; run scripts/setup-deps.sh (or apt-get install npm)" >&2
    exit 1
fi
mkdir -p "$DIR"
echo "anvil: installing the ggml oracle ($PKG) into $DIR"
npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error "$PKG"
if [ ! -f "$LIB" ]; then
    echo "anvil: $PKG installed but $LIB is missing" >&2
    exit 1
fi
llama_source
