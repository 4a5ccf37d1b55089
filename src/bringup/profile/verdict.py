"""Name the bottleneck of a profiled configuration, against the reference's profile.

Two things decide whether a share is this configuration's own cost: the reference's
profile (a share the reference has too is the model's, not the flag's, so the *excess*
share over the reference is what is ranked) and how busy the GPU was (kernel time / step
wall time: under :data:`HOST_BOUND` the step waits on the host, launches or scheduling,
whatever its top kernel is). Kernel and op families are matched by name; each has the flag
that addresses it where one is known (vLLM / SGLang spellings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bringup.profile.trace import Share, TraceSummary

HOST_BOUND = 0.5  # GPU busy below this: the host, not a kernel, sets the step time
EXCESS = 0.10  # a family must take this much more of the step than in the reference

# (family, name regex, what it is, the flag that addresses it)
FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    (
        "kv-cast",
        r"aten::copy_|aten::to\b|aten::_to_copy|unrolled_elementwise|reshape_and_cache|"
        r"convert_fp8|fp8.*(?:copy|cast|dequant)|dequant",
        "casting the KV cache (FP8 to BF16 per layer) or copying tensors",
        "--kv-cache-dtype auto (keep the KV cache in the model's dtype)",
    ),
    (
        "attention",
        r"flash|fmha|attn|attention|paged|unified_attention|flex",
        "the attention kernels",
        "--attention-backend (try another backend)",
    ),
    (
        "gemm",
        r"gemm|cutlass|sm90_xmma|nvjet|cublas|aten::mm|aten::addmm|aten::linear|matmul",
        "the matrix products (weights)",
        "a larger batch (--max-num-seqs) or quantized weights",
    ),
    (
        "sampling",
        r"topk|top_k|softmax|sampl|argmax|log_softmax|multinomial",
        "sampling",
        "",
    ),
    (
        "norm-activation",
        r"rms_?norm|layer_?norm|gelu|silu|act_and_mul|rotary",
        "norms, activations and rotary embedding",
        "CUDA graphs / torch.compile fuse these (drop --enforce-eager)",
    ),
)


def family(name: str) -> str:
    low = name.lower()
    for fam, pattern, _, _ in FAMILIES:
        if re.search(pattern, low):
            return fam
    return "other"


@dataclass
class Delta:
    name: str
    share: float
    reference_share: float

    @property
    def excess(self) -> float:
        return self.share - self.reference_share


def diff(rows: list[Share], reference: list[Share] | None) -> list[Delta]:
    ref = {r.name: r.share for r in reference or []}
    out = [Delta(r.name, r.share, ref.get(r.name, 0.0)) for r in rows]
    return sorted(out, key=lambda d: -d.excess if reference else -d.share)


def family_shares(rows: list[Share]) -> dict[str, float]:
    shares: dict[str, float] = {}
    for r in rows:
        fam = family(r.name)
        shares[fam] = shares.get(fam, 0.0) + r.share
    return shares


@dataclass
class Bottleneck:
    kind: str  # "host" or a family name
    reason: str
    flag: str


def bottleneck(
    summary: TraceSummary, reference: TraceSummary | None, eager: bool = False
) -> Bottleneck:
    """The bottleneck named from GPU busy first, then the op family with the most excess."""
    if summary.decode_steps and summary.gpu_busy < HOST_BOUND:
        flag = (
            "drop --enforce-eager (CUDA graphs replay the step's launches at once)"
            if eager
            else "CUDA graphs for more batch sizes, or a larger batch (--max-num-seqs)"
        )
        return Bottleneck(
            "host",
            f"the GPU was busy {summary.gpu_busy:.0%} of the decode step "
            f"({summary.kernel_us:.0f} of {summary.step_wall_us:.0f} us): the host "
            "(Python, kernel launches, scheduling) sets the step time",
            flag,
        )
    mine = family_shares(summary.top_ops or summary.top_kernels)
    ref = family_shares((reference.top_ops or reference.top_kernels) if reference else [])
    ranked = sorted(mine, key=lambda f: -(mine[f] - ref.get(f, 0.0)))
    for fam in ranked:
        excess = mine[fam] - ref.get(fam, 0.0)
        if fam == "other" or (reference is not None and excess < EXCESS):
            continue
        what, flag = next((w, f) for n, _, w, f in FAMILIES if n == fam)
        base = f", {ref.get(fam, 0.0):.0%} in the reference" if reference else ""
        return Bottleneck(fam, f"{what}: {mine[fam]:.0%} of decode kernel time{base}", flag)
    return Bottleneck(
        "none",
        "no op family takes clearly more of the step than in the reference"
        if reference
        else "no reference profile to compare with; the top ops are the model's own cost",
        "",
    )
