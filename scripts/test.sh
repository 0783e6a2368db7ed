#!/usr/bin/env bash
# Set up the environment (scripts/install.sh, skipped when up to date) and run the default
# test suite. Extra arguments go to pytest, e.g. `bash scripts/test.sh -k webshop`.
# Slow tests (pytest -m slow) run in CI's second step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec .venv/bin/python -m pytest -q -m "not slow" "$@"
