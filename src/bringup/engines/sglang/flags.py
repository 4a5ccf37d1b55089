"""SGLang's captured help and the flags (and values) it renamed or removed.

``help/sglang-0.5.23-serve-help.txt``: ``sglang serve --help`` of SGLang 0.5.23 (parser
built on CPU).
"""

from __future__ import annotations

from bringup.engines.flagcheck import CapturedHelp, KnownChange

CAPTURED = CapturedHelp(
    "bringup.engines.sglang", "sglang-0.5.23-serve-help.txt", "0.5.23", "argparse"
)

KNOWN_CHANGES = (
    KnownChange(
        "--mamba-scheduler-strategy",
        "renamed to --mamba-radix-cache-strategy in SGLang 0.5.15 and removed in 0.5.20",
        "--mamba-radix-cache-strategy",
    ),
    KnownChange(
        "--cuda-graph-max-bs",
        "split into --cuda-graph-max-bs-decode/-prefill in SGLang 0.5.15; the old name "
        "was removed in 0.5.20 and is now an ambiguous prefix",
        "--cuda-graph-max-bs-decode",
    ),
    KnownChange(
        "--kv-cache-dtype",
        "SGLang has no plain fp8 KV dtype; its fp8 (e4m3, what other engines call fp8) is fp8_e4m3",
        "--kv-cache-dtype fp8_e4m3",
        value="fp8",
    ),
    *(
        KnownChange(
            flag,
            "the cutlass_mla backend was deprecated (sgl-project/sglang#32111) and is "
            "gone from 0.5.23; trtllm_mla or tokenspeed_mla (alias of cutedsl_mla) "
            "replace it for MLA decode",
            f"{flag} trtllm_mla",
            value="cutlass_mla",
        )
        for flag in (
            "--attention-backend",
            "--decode-attention-backend",
            "--prefill-attention-backend",
        )
    ),
)
