#!/usr/bin/env bash
# Install the peer code that mmrag's parity tests and perf scripts compare against:
#   * the official HumbleBench scorer: PyPI humblebench 1.0.2, WITHOUT its pinned dependencies
#     (they conflict with ours; its metrics module only needs what mmrag already has);
#   * lmms-eval's VQA answer processor: the single file
#     lmms_eval/tasks/_task_utils/vqa_eval_metric.py taken from the lmms-eval wheel (the package
#     itself is not installed), placed in $VENV/mmrag-peers/ where the tests load it from.
# Idempotent and quiet.  If a peer cannot be installed it records why in $VENV/mmrag-peers/STATUS
# and EXITS NON-ZERO, so `make test` stops: the parity tests that need a peer fail (never skip)
# without it, and a silent skip would hide the strongest tests.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-${VENV:-$ROOT/.venv}}"   # usage: install_peers.sh [VENV_DIR]
VENV="$(cd "$VENV" 2>/dev/null && pwd || echo "$VENV")"
PY="$VENV/bin/python"
PEERS="$VENV/mmrag-peers"
HB_VERSION="${HUMBLEBENCH_VERSION:-1.0.2}"
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"
VQA_FILE="lmms_eval/tasks/_task_utils/vqa_eval_metric.py"
mkdir -p "$PEERS"
STATUS="$PEERS/STATUS"
: > "$STATUS.tmp"
LOG="$PEERS/install.log"
: > "$LOG"

if "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('humblebench') != '$HB_VERSION')" 2>/dev/null; then
  echo "humblebench=ok" >> "$STATUS.tmp"
elif "$PY" -m pip install --quiet --no-deps "humblebench==$HB_VERSION" >>"$LOG" 2>&1; then
  echo "humblebench=ok" >> "$STATUS.tmp"
else
  echo "humblebench=failed: pip install --no-deps humblebench==$HB_VERSION failed (see $LOG)" >> "$STATUS.tmp"
fi

if [ -s "$PEERS/vqa_eval_metric.py" ] && grep -q "class EvalAIAnswerProcessor" "$PEERS/vqa_eval_metric.py"; then
  echo "lmms_eval_vqa=ok" >> "$STATUS.tmp"
else
  TMP="$(mktemp -d)"
  if "$PY" -m pip download --quiet --no-deps "lmms-eval==$LMMS_VERSION" -d "$TMP" >>"$LOG" 2>&1 \
     && "$PY" - "$TMP" "$PEERS" "$VQA_FILE" >>"$LOG" 2>&1 <<'PYEOF'
import glob, os, sys, zipfile
tmp, peers, member = sys.argv[1:4]
wheel = glob.glob(os.path.join(tmp, "lmms_eval-*.whl"))[0]
with zipfile.ZipFile(wheel) as zf:
    data = zf.read(member)
dest = os.path.join(peers, "vqa_eval_metric.py")
with open(dest + ".tmp", "wb") as fh:
    fh.write(data)
os.replace(dest + ".tmp", dest)
PYEOF
  then
    echo "lmms_eval_vqa=ok" >> "$STATUS.tmp"
  else
    echo "lmms_eval_vqa=failed: could not download lmms-eval==$LMMS_VERSION or extract $VQA_FILE (see $LOG)" >> "$STATUS.tmp"
  fi
  rm -rf "$TMP"
fi
mv "$STATUS.tmp" "$STATUS"
if grep -q "=failed" "$STATUS"; then
  echo "install_peers: FAILED to install peer code the parity tests need:" >&2
  grep "=failed" "$STATUS" >&2
  echo "install_peers: see $LOG" >&2
  exit 1
fi
exit 0
