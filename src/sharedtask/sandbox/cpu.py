"""CPU profiles: what a container is told about the CPU's vector units, and what the host has.

Numeric libraries pick their kernels by the CPU they find (numpy's dispatch, OpenBLAS's
``DYNAMIC_ARCH``, HotSpot's intrinsics), and a float sum taken by an AVX-512 kernel can end
in other bits than the same sum taken by an AVX2 kernel. A profile hides the newer vector
units from those three libraries through their own documented switches, so one machine can
show what an older one would compute:

* numpy: ``NPY_DISABLE_CPU_FEATURES`` (numpy's "CPU build options" page; numpy 2.x names the
  groups ``X86_V3``/``X86_V4``, numpy 1.x names the single features; unknown names are
  ignored, so both spellings are given);
* OpenBLAS: ``OPENBLAS_CORETYPE`` (its README, "Setting the CPU at run time");
* the JVM (Anserini): ``-XX:UseAVX=N`` through ``JAVA_TOOL_OPTIONS`` (HotSpot's flag; 2 allows
  AVX2 and no AVX-512, 0 no AVX at all).

The kernel's ``/proc/cpuinfo`` still lists every flag: a profile emulates an older CPU for
the libraries that choose kernels, not for a program that executes AVX-512 instructions by
itself. ``native`` (the default) changes nothing. The default can be set for a whole
process tree with ``SHAREDTASK_CPU_PROFILE`` (the test suite's second pass uses it).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError

#: environment variable that sets the default profile of every sandboxed run
PROFILE_ENV = "SHAREDTASK_CPU_PROFILE"

# numpy 2.x group names, then numpy 1.x feature names, for the same units
_NUMPY_AVX512 = ("X86_V4", "AVX512_ICL", "AVX512_SPR", "AVX512F", "AVX512CD", "AVX512_KNL", "AVX512_KNM",
                 "AVX512_SKX", "AVX512_CLX", "AVX512_CNL")
_NUMPY_AVX = ("X86_V3", "AVX", "F16C", "FMA3", "AVX2")

#: the /proc/cpuinfo flags worth recording: the ones that change which kernels run
SIMD_FLAGS = ("sse4_2", "avx", "f16c", "fma", "avx2", "avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl",
              "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile")


@dataclass(frozen=True)
class CpuProfile:
    """One emulated CPU: the environment its containers get and the flags that hides."""

    name: str
    description: str
    environment: tuple[tuple[str, str], ...]
    hides: tuple[str, ...]  # /proc/cpuinfo flags the libraries no longer see

    def env(self) -> dict[str, str]:
        return dict(self.environment)


_HIDE_AVX512 = tuple(f for f in SIMD_FLAGS if f.startswith(("avx512", "amx")))

PROFILES: dict[str, CpuProfile] = {
    "native": CpuProfile("native", "the CPU as it is", (), ()),
    "haswell": CpuProfile(
        "haswell", "x86-64-v3: AVX2 and FMA, no AVX-512 (Intel Haswell, AMD Zen 1-3)",
        (("NPY_DISABLE_CPU_FEATURES", " ".join(_NUMPY_AVX512)),
         ("OPENBLAS_CORETYPE", "Haswell"),
         ("JAVA_TOOL_OPTIONS", "-XX:UseAVX=2")),
        _HIDE_AVX512),
    "nehalem": CpuProfile(
        "nehalem", "x86-64-v2: SSE4.2, no AVX at all (Intel Nehalem)",
        (("NPY_DISABLE_CPU_FEATURES", " ".join(_NUMPY_AVX512 + _NUMPY_AVX)),
         ("OPENBLAS_CORETYPE", "Nehalem"),
         ("JAVA_TOOL_OPTIONS", "-XX:UseAVX=0")),
        _HIDE_AVX512 + ("avx", "f16c", "fma", "avx2")),
}


def profile(name: str | None = None) -> CpuProfile:
    """The named profile; without a name, ``$SHAREDTASK_CPU_PROFILE`` or ``native``."""
    chosen = name or os.environ.get(PROFILE_ENV) or "native"
    try:
        return PROFILES[chosen]
    except KeyError:
        source = "" if name else f" (from ${PROFILE_ENV})"
        raise SharedTaskError(f"unknown CPU profile {chosen!r}{source}",
                              hint=f"choose one of {', '.join(PROFILES)}") from None


@cache
def host_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, tuple[str, ...]]:
    """(model name, SIMD flags in :data:`SIMD_FLAGS` order) of this machine's first CPU."""
    model, flags = platform.processor() or platform.machine(), ()
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return model, flags
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and value.strip():
            model = value.strip()
        elif key in ("flags", "Features"):
            present = set(value.split())
            flags = tuple(f for f in SIMD_FLAGS if f in present)
        elif not line.strip() and flags:
            break  # the first processor is enough: a VM's CPUs are alike
    return model, flags


def describe(chosen: CpuProfile) -> dict[str, Any]:
    """What a run record says of the CPU: the model, its SIMD flags, and what the image saw."""
    model, flags = host_cpu()
    return {
        "model": model,
        "machine": platform.machine(),
        "simd": list(flags),
        "profile": chosen.name,
        "hidden": [f for f in flags if f in chosen.hides],
        "seen_by_image": [f for f in flags if f not in chosen.hides],
        "environment": chosen.env(),
    }


def difference(original: dict[str, Any] | None, new: dict[str, Any] | None) -> str | None:
    """One sentence on how two runs' CPUs differed, or None when they looked alike."""
    if not isinstance(original, dict) or not isinstance(new, dict):
        return None
    seen = (list(original.get("seen_by_image") or []), list(new.get("seen_by_image") or []))
    if original.get("model") == new.get("model") and seen[0] == seen[1]:
        return None
    only_old = [f for f in seen[0] if f not in seen[1]]
    only_new = [f for f in seen[1] if f not in seen[0]]
    parts = [f"the original ran on {original.get('model')} (profile {original.get('profile')}), "
             f"this run on {new.get('model')} (profile {new.get('profile')})"]
    if only_old:
        parts.append(f"only the original's image saw {', '.join(only_old)}")
    if only_new:
        parts.append(f"only this run's image saw {', '.join(only_new)}")
    return "; ".join(parts) + (": numeric code whose kernels depend on the vector units (BLAS, numpy) can "
                               "give other last bits there")
