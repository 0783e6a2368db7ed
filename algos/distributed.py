"""The world of a data-parallel run: ranks from ``torchrun``, collectives, DDP/FSDP2 wrapping.

``torchrun --nproc_per_node N -m algos train RECIPE`` starts N ranks of the same run
(docs/scaling.md). :func:`init_world` reads the launcher's ``RANK``, ``LOCAL_RANK`` and
``WORLD_SIZE`` and joins the process group; without them (or with ``WORLD_SIZE=1``) it returns
the world of one process, whose every collective is a no-op and whose wrapping returns the
module itself, so a single process runs the very same learner code.

What each rank does, and why the update equals one process on the whole batch, is in
:mod:`algos.global_batch`. This module only knows ranks and modules:

* ``dist.strategy = "ddp"``: ``DistributedDataParallel`` around the policy and the critic
  (gradients averaged across ranks by all-reduce; a full copy of the weights per rank);
* ``dist.strategy = "fsdp"``: FSDP2 (``torch.distributed.fsdp.fully_shard``) on every decoder
  layer and then the whole model (policy, critic and reference): parameters, gradients and
  AdamW states are sharded, and every forward all-gathers a layer's weights. The ``hf`` rollout
  backend then generates with a plain replica of the policy that receives the trained weights
  after each update (one extra copy of the policy per rank: use ``vllm`` on GPU).

Both average gradients over ranks, so :meth:`World.scale_loss` multiplies each rank's loss by
the world size: the sum over ranks of the per-rank losses, each normalised by the global
mini-batch's counts, is the one-process loss, and so is the averaged gradient. (That replaces
``agg_loss``'s ``dp_size`` argument, which ``seq-mean-token-sum-norm`` and a registered loss
without the keyword would not apply.)
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import gc
import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

#: Seeds of ranks > 0 are ``seed + RANK_SEED_STRIDE * rank``: rank 0 keeps the run's own seed.
RANK_SEED_STRIDE = 1_000_003


def launcher_world_size() -> int:
    """``WORLD_SIZE`` as set by ``torchrun`` (1 when unset)."""
    try:
        return max(int(os.environ.get("WORLD_SIZE", "1")), 1)
    except ValueError:
        raise ValueError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not an integer; start ranks with torchrun"
        ) from None


def launcher_rank() -> int:
    """``RANK`` as set by ``torchrun`` (0 when unset)."""
    return int(os.environ.get("RANK", "0") or 0)


#: Most rollout envs one process holds (``env.num_tasks x env.group_size``, over the ranks).
MAX_ENVS_PER_PROCESS = 4096


def check_world(cfg: Any, size: int) -> None:
    """Settings a run of ``size`` ranks cannot take; raised before anything is built.

    Raises:
        ValueError: More rollout envs per process than :data:`MAX_ENVS_PER_PROCESS`, fewer
            task groups than ranks, ``model.init = "sft"`` (its stage runs in one process),
            FSDP with LoRA, or an explicit ``cuda:N`` device.
    """
    tasks, group = cfg.env.num_tasks, cfg.env.group_size
    most = -(-tasks // max(size, 1)) * group  # the envs of the rank with the most groups
    if most > MAX_ENVS_PER_PROCESS:
        ranks = f" on the busiest of {size} ranks" if size > 1 else ""
        raise ValueError(
            f"env.num_tasks x env.group_size = {tasks} x {group}: {most} envs in one "
            f"process{ranks}, more than the {MAX_ENVS_PER_PROCESS} a process holds; lower "
            "env.num_tasks, or share the groups among more ranks (torchrun, docs/scaling.md)"
        )
    if size <= 1:
        return
    if cfg.env.num_tasks < size:
        raise ValueError(
            f"env.num_tasks = {cfg.env.num_tasks} task groups cannot be shared by {size} ranks "
            f"(WORLD_SIZE): each rank needs at least one group; raise env.num_tasks or start "
            "fewer ranks"
        )
    if cfg.model.init == "sft":
        raise ValueError(
            f"model.init = 'sft' runs its behaviour-cloning stage in one process, not under "
            f"{size} ranks: run `algos sft RECIPE` first, then train with "
            "--set model.init=RUN_DIR"
        )
    if cfg.dist.strategy == "fsdp" and cfg.model.lora_rank:
        raise ValueError(
            f"dist.strategy = 'fsdp' with model.lora_rank = {cfg.model.lora_rank}: LoRA adapters "
            "are small, use dist.strategy = 'ddp'"
        )
    if cfg.model.device.startswith("cuda:"):
        raise ValueError(
            f"model.device = {cfg.model.device!r} under {size} ranks: use 'auto' or 'cuda' "
            "(rank r takes cuda:LOCAL_RANK)"
        )


def init_world(cfg: Any) -> World:
    """The world this process belongs to: one process, or a rank of a ``torchrun`` job.

    Joins the default process group (``env://``) when ``WORLD_SIZE > 1``, unless the caller
    already did; the backend is ``dist.backend`` (``auto``: nccl when the model trains on CUDA,
    else gloo) and every collective fails after ``dist.timeout_s`` instead of waiting forever.

    Raises:
        ValueError: See :func:`check_world`; or the launcher's variables are incomplete.
    """
    size = launcher_world_size()
    check_world(cfg, size)
    if size == 1:
        return World()
    import torch.distributed as dist

    missing = [k for k in ("RANK", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing and not dist.is_initialized():
        raise ValueError(
            f"WORLD_SIZE={size} but {', '.join(missing)} not set: start ranks with torchrun "
            "(docs/scaling.md)"
        )
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", rank))
    from algos.policy import resolve_device

    on_cuda = resolve_device(cfg.model.device).startswith("cuda")
    backend = cfg.dist.backend if cfg.dist.backend != "auto" else ("nccl" if on_cuda else "gloo")
    if on_cuda:
        torch.cuda.set_device(local)  # "cuda" now means this rank's GPU
    owns = not dist.is_initialized()
    if owns:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=cfg.dist.timeout_s))
    if dist.get_world_size() != size:
        raise ValueError(
            f"WORLD_SIZE={size} but the process group has {dist.get_world_size()} ranks"
        )
    device = torch.device("cuda", local) if on_cuda else torch.device("cpu")
    return World(
        rank=dist.get_rank(),
        size=size,
        local_rank=local,
        strategy=cfg.dist.strategy,
        device=device,
        owns_group=owns,
    )


@dataclass
class World:
    """This process's rank in the run; the defaults are the world of one process.

    Attributes:
        rank: 0..size-1 (rank 0 writes every file of the run).
        size: Number of ranks.
        local_rank: Rank on this machine (its GPU index).
        strategy: ``ddp`` or ``fsdp``.
        device: This rank's device (collective tensors and the FSDP mesh live there).
        owns_group: This world created the process group (and so destroys it).
    """

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    strategy: str = "ddp"
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    owns_group: bool = False
    _replica: Any = None
    _mesh: Any = None

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that logs and writes files."""
        return self.rank == 0

    def seed(self, seed: int) -> int:
        """This rank's sampling seed (the run's seed on rank 0, distinct on the others)."""
        return seed + RANK_SEED_STRIDE * self.rank

    def env_range(self, num_tasks: int, group_size: int) -> tuple[int, int]:
        """``(lo, hi)``: the env indices of this rank's whole task groups.

        Groups are dealt in contiguous blocks, the first ``num_tasks % size`` ranks taking one
        more, so a group never spans ranks and rank r's envs follow rank r-1's.

        >>> World(rank=1, size=2).env_range(3, 4)
        (8, 12)
        """
        base, extra = divmod(num_tasks, self.size)
        first = self.rank * base + min(self.rank, extra)
        count = base + (self.rank < extra)
        return first * group_size, (first + count) * group_size

    # ---- collectives (identity at world size 1) ---------------------------------------------

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (pickled; for small metadata)."""
        if self.size == 1:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def broadcast_object(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if self.size == 1:
            return obj
        import torch.distributed as dist

        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def reduce(self, values: list[float], op: str = "sum") -> list[float]:
        """Element-wise ``sum`` or ``max`` of ``values`` over ranks (same length on every rank)."""
        if self.size == 1:
            return list(values)
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX)
        return t.tolist()

    def max_int(self, value: int) -> int:
        """The largest ``value`` of any rank."""
        return value if self.size == 1 else int(self.reduce([float(value)], "max")[0])

    def reduce_metrics(self, acc: dict[str, float], finite: bool) -> tuple[dict[str, float], bool]:
        """Sum per-rank partial metrics (the same keys on every rank); finite on every rank.

        One all-reduce per optimiser step: each rank's micro-batch metrics are already
        weighted by the global mini-batch's counts, so their sum is the one-process value.
        """
        if self.size == 1:
            return acc, finite
        keys = sorted(acc)
        out = self.reduce([0.0 if finite else 1.0] + [acc[k] for k in keys])
        return dict(zip(keys, out[1:])), out[0] == 0.0

    def barrier(self) -> None:
        """Wait for every rank (e.g. while rank 0 alone evaluates or writes a checkpoint)."""
        if self.size > 1:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        """Leave the process group once every rank got here (a finished run)."""
        if self.size > 1 and self.owns_group:
            import torch.distributed as dist

            # FSDP's hooks still hold the group: destroying it under them aborts the process.
            gc.collect()
            dist.barrier()
            dist.destroy_process_group()
            self.owns_group = False

    # ---- models ---------------------------------------------------------------------------

    def rollout_copy(self, model: Any, backend: str) -> Any:
        """The module the rollout backend is built on: ``model``, or (FSDP + hf) a replica."""
        if self.size > 1 and self.strategy == "fsdp" and backend == "hf":
            # The hf backend calls generate(); a sharded module would all-gather in every
            # forward, and ranks generate different numbers of tokens.
            self._replica = copy.deepcopy(model)
            return self._replica
        return model

    def wrap(self, models: Any) -> None:
        """Wrap ``models.model``, ``.critic`` (and, with FSDP, ``.ref``) for this world in place."""
        if self.size == 1:
            return
        if self.strategy == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [self.local_rank] if self.device.type == "cuda" else None
            # No buffer sync inside forward: the no-grad scoring passes may differ in number
            # across ranks (the buffers, rotary tables, are equal on every rank anyway).
            params = inspect.signature(DDP.__init__).parameters
            quiet = (
                "forward_sync_buffers" if "forward_sync_buffers" in params else "broadcast_buffers"
            )
            opts = {"device_ids": ids, quiet: False}
            models.model = DDP(models.model, **opts)
            if models.critic is not None:
                models.critic = DDP(models.critic, **opts)
            return
        for name in ("model", "critic", "ref"):
            module = getattr(models, name)
            if module is not None:
                self._shard(module)

    def _shard(self, module: Any) -> None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        if self._mesh is None:
            self._mesh = init_device_mesh(self.device.type, (self.size,))
        for block in _blocks(module):
            fully_shard(block, mesh=self._mesh)
        fully_shard(module, mesh=self._mesh)

    @contextlib.contextmanager
    def grad_sync(self, modules: list[Any], enabled: bool) -> Iterator[None]:
        """Reduce gradients across ranks in this backward pass only if ``enabled``.

        The learner accumulates a mini-batch's micro-batches with the reduction off and
        reduces once, in the last one (every rank runs the same number of them).
        """
        if self.size == 1 or enabled:
            yield
            return
        if self.strategy == "ddp":
            with contextlib.ExitStack() as stack:
                for m in modules:
                    stack.enter_context(m.no_sync())
                yield
            return
        for m in modules:
            m.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            for m in modules:
                m.set_requires_gradient_sync(True)

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss * size``: DDP and FSDP average gradients; the update needs their sum."""
        return loss * self.size if self.size > 1 else loss

    def rollout_model(self, model: Any) -> Any:
        """What the backend's ``sync_weights`` gets after an update (a plain module's view).

        One process: ``model``. DDP: the wrapped module. FSDP: the hf replica with the new
        weights copied in, or (vLLM) an object whose ``state_dict()`` gathers full tensors.
        Under FSDP every rank must call this (it all-gathers).
        """
        if self.size == 1:
            return model
        if self.strategy == "ddp":
            return model.module
        if self._replica is not None:
            mine = dict(self._replica.named_parameters())
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if p.requires_grad:
                        mine[name].copy_(full_tensor(p))
            return self._replica
        return FullWeights(model)


def _blocks(module: Any) -> list[Any]:
    """The repeated blocks FSDP shards one by one: the longest ``*.layers`` ModuleList."""
    best: list[Any] = []
    for name, child in module.named_modules():
        if isinstance(child, torch.nn.ModuleList) and name.split(".")[-1] == "layers":
            if len(child) > len(best):
                best = list(child)
    return best


class FullWeights:
    """A sharded module seen as a plain one by weight export: ``state_dict()`` of full tensors."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Name -> full CPU tensor (all-gathered, one at a time)."""
        return {k: full_tensor(v).detach().cpu() for k, v in self.module.state_dict().items()}


# ---- tensors that may be sharded ---------------------------------------------------------


def plain(module: Any) -> Any:
    """The module inside a DDP wrapper (FSDP2 keeps the module and its parameter names)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    return module.module if isinstance(module, DDP) else module


def _is_dtensor(t: Any) -> bool:
    from torch.distributed.tensor import DTensor

    return isinstance(t, DTensor)


def full_tensor(t: Any) -> Any:
    """``t`` itself, or the all-gathered tensor of an FSDP shard (every rank must call)."""
    return t.full_tensor() if _is_dtensor(t) else t


def shard_like(param: Any, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` (a full value) laid out as ``param``: this rank's shard of it under FSDP."""
    if not _is_dtensor(param):
        return tensor
    from torch.distributed.tensor import distribute_tensor

    # src_data_rank=None: every rank holds the full value, so each keeps its slice (no copy
    # over the network).
    return distribute_tensor(
        tensor.detach(), param.device_mesh, param.placements, src_data_rank=None
    )


def full_optimizer_state(state: dict[str, Any]) -> dict[str, Any]:
    """An optimiser ``state_dict()`` with every sharded tensor gathered (every rank must call).

    The result has the one-process layout (states keyed by parameter index), so a checkpoint
    written by N ranks loads into any number of ranks.
    """
    if not any(_is_dtensor(v) for entry in state["state"].values() for v in entry.values()):
        return state
    out = {"param_groups": state["param_groups"], "state": {}}
    for idx in sorted(state["state"]):
        out["state"][idx] = {
            k: full_tensor(v).detach().cpu() if torch.is_tensor(v) else v
            for k, v in state["state"][idx].items()
        }
    return out


def shard_optimizer_state(state: dict[str, Any], optimizer: Any) -> dict[str, Any]:
    """A full (one-process layout) optimiser state laid out as ``optimizer``'s parameters."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not any(_is_dtensor(p) for p in params):
        return state
    out = {"param_groups": state["param_groups"], "state": {}}
    for idx, entry in state["state"].items():
        p = params[int(idx)]
        out["state"][idx] = {
            k: shard_like(p, v.to(device=p.device, dtype=p.dtype))
            if torch.is_tensor(v) and tuple(v.shape) == tuple(p.shape)
            else v
            for k, v in entry.items()
        }
    return out
