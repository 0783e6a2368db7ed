set -x
nproc; uptime; which python3; python3 -c "import torch, numpy; print(torch.__version__, numpy.__version__, torch.cuda.is_available())" 2>&1
PY=python3
$PY -c "import torch" 2>/dev/null || exit 0
export OMP_NUM_THREADS=1
$PY - <<'PY' 2>&1 | tail -20
import torch, numpy as np, algos
dev = "cuda" if torch.cuda.is_available() else "cpu"
m = torch.ones(6, 4, device=dev)
for name in sorted(algos.ESTIMATORS):
    pass
a, r = algos.gigpo_advantage([0,0,1,0,0,0], m, ["g"]*6, list("AAABBB"), [0,1,2,0,1,2], ["s0","s1","s2","s0","s3","s3"], gamma=0.5)
print("gigpo", a.device, a[:, 0].tolist())
a, _ = algos.gae.gae(torch.zeros(6, 4, device=dev), torch.rand(6, 4, device=dev), m)
print("gae", a.device)
a, _ = algos.step_gae([0,1,0,0,0,1], torch.rand(6), m, list("AAABBB"), [0,1,2,0,1,2], sample_mask=torch.tensor([1,1,1,1,1,0], dtype=torch.bool, device=dev))
print("step_gae", a.device)
lp = torch.randn(6, 4, device=dev, requires_grad=True)
loss, met = algos.ppo_clip_loss(lp.detach() + 0.1, lp, a, m); loss.backward(); print("ppo", loss.item(), lp.grad.device)
loss, met = algos.gspo_loss(lp.detach() + 0.1, lp, a, m); print("gspo", loss.item())
print("vmask", algos.value_mask(m, torch.tensor([1,1,1,1,1,0], dtype=torch.bool, device=dev)).device)
PY
$PY benchmarks/bench_advantages.py 2>&1 | tail -30
