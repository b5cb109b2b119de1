"""Where a stacked ensemble's training step spends its time on a GPU (issue #54; run by the device tool).

    python benchmarks/ensemble_profile.py [PRESET] [K]

Times K members' steps (the stacked engine) with cuDNN's autotuner off and on, then profiles 10 steps: the
kernels by GPU time, and the step's wall time against the GPU's busy time (a CPU-bound step shows the gap).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from empirical.ensemble import open_members  # noqa: E402
from empirical.training import stacked  # noqa: E402
from empirical.training.config import make_config  # noqa: E402


def rate(ens, steps: int, cuda: bool) -> float:
    for _ in range(3):
        ens.train_step()
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        ens.train_step()
    if cuda:
        torch.cuda.synchronize()
    return steps / (time.perf_counter() - start)


def main() -> None:
    preset, k = (sys.argv[1:] + ["small", "24"][len(sys.argv) - 1 :])[:2]
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        probe = [f"probe={tmp}/probe"] if preset == "smoke" else []
        cfgs = [
            make_config(preset, [f"seed={i}", f"device={device}", *probe]) for i in range(int(k))
        ]
        runs = open_members(cfgs, [Path(tmp) / f"m{i}" for i in range(len(cfgs))], progress=False)
        ens = stacked.Stacked(runs)
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench
            print(f"K={k} cudnn.benchmark={bench}: {rate(ens, 20, cuda):.2f} steps/s", flush=True)
        acts = [torch.profiler.ProfilerActivity.CPU] + (
            [torch.profiler.ProfilerActivity.CUDA] if cuda else []
        )
        with torch.profiler.profile(activities=acts) as prof:
            start = time.perf_counter()
            for _ in range(10):
                ens.train_step()
            if cuda:
                torch.cuda.synchronize()
            wall = time.perf_counter() - start
        key = "self_device_time_total" if cuda else "self_cpu_time_total"
        events = prof.key_averages()
        busy = sum(getattr(e, "self_device_time_total", 0) for e in events) / 1e6
        print(f"10 steps: wall {wall:.3f} s, GPU busy {busy:.3f} s", flush=True)
        print(
            events.table(
                sort_by=key, row_limit=int(os.environ.get("ROWS", "25")), max_name_column_width=60
            )
        )


if __name__ == "__main__":
    main()
