"""Float32 against bfloat16 layers (``model.compute_dtype``) on this CPU: one prefill, timed.

    OMP_NUM_THREADS=2 python benchmarks/bench_compute_dtype.py [--batch 8 --tokens 300 --reps 2]

Runs SmolLM2-135M-Instruct's forward over ``batch`` random prompts of ``tokens`` tokens, first
as the float32 model, then with its decoder layers under bfloat16 autocast (what
``model.compute_dtype = "bfloat16"`` does), and prints a Markdown row with the CPU's bfloat16
support (AVX512-BF16, AMX), both times and their ratio. ``compute_dtype = "auto"`` (the
ALFWorld CPU profile) picks bfloat16 only where the CPU has those units: this measures why.
"""

from __future__ import annotations

import argparse
import copy
import platform
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()

    import torch

    from algos.models import load_model
    from algos.policy import native_bfloat16
    from algos.trunk import autocast_layers

    model, _ = load_model("smollm2-135m", seed=0)
    model.eval()
    shape, gen = (args.batch, args.tokens), torch.Generator().manual_seed(0)
    ids = torch.randint(300, 40000, shape, generator=gen)

    def seconds(m) -> float:
        with torch.no_grad():
            m(ids)  # warm-up
            t = time.perf_counter()
            for _ in range(args.reps):
                m(ids)
        return (time.perf_counter() - t) / args.reps

    fp32 = seconds(model)
    low = copy.deepcopy(model)
    autocast_layers(low, torch.bfloat16)
    bf16 = seconds(low)
    cpu = torch.backends.cpu.get_cpu_capability()
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, CPU capability {cpu}\n")  # fmt: skip
    print("| native bfloat16 (AVX512-BF16 or AMX) | tokens | float32 s | bfloat16 layers s "
          "| bfloat16 / float32 |\n|---|---:|---:|---:|---:|")  # fmt: skip
    print(f"| {'yes' if native_bfloat16('cpu') else 'no'} | {args.batch * args.tokens} | "
          f"{fp32:.2f} | {bf16:.2f} | {bf16 / fp32:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
