#!/bin/sh
# Install ggml (the parity oracle) from npm into the build tree:
#   $1/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so
set -eu
DIR="$1"
PKG="@node-llama-cpp/linux-x64@3.22.1"
LIB="$DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"
if [ -f "$LIB" ]; then
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
