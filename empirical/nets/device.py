"""Where the networks compute and in what precision: the device for ``device=`` (auto, cpu, cuda),
its name for the reproducibility stamp, and bf16 autocast where the device computes bf16 natively
(``precision=``)."""

from __future__ import annotations

import contextlib

import torch

# the valid values of precision=; resolve_precision says what auto becomes on a device
PRECISIONS = (
    "auto",
    "bf16",
    "fp32",
)


def select_device(name: str, flag: str = "device") -> torch.device:
    """``auto`` (CUDA when torch sees it, else CPU), ``cpu`` or ``cuda``; ValueError when CUDA is
    asked for but absent."""
    if name not in ("auto", "cpu", "cuda"):
        raise ValueError(f"{flag} {name}: valid: auto, cpu, cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{flag} cuda: torch sees no CUDA device; valid here: auto, cpu")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def device_name(device: torch.device) -> str:
    """The device in words, for the reproducibility stamp: ``cuda: NVIDIA H100 ...`` or ``cpu (N
    threads)``."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu ({torch.get_num_threads()} threads)"


def bf16_native(device: torch.device) -> bool:
    """Whether the device computes bf16 natively: a CUDA GPU that supports it, or a CPU with
    AVX512-BF16 or AMX."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return torch.backends.mkldnn.is_available() and bool(
        torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` -> ``bf16`` where the device computes it natively, else ``fp32``; ``bf16`` and
    ``fp32`` as given."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not valid; valid: {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if bf16_native(device) else "fp32"
    return precision


def autocast(device: torch.device, precision: str):
    """bf16 autocast when ``precision`` resolves to bf16 on this device; nothing for fp32."""
    if resolve_precision(precision, device) == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
