"""Convert Gemma 3 270M from GGUF (Q4_K_M) to bf16 safetensors that vLLM 0.26 loads.

vLLM 0.26 has no in-tree GGUF loader, so the device's transformers dequantizes the GGUF
and saves it; the quantizer state it leaves behind would make vLLM look for a GGUF
quantization, so it is cleared first. The tokenizer transformers builds from this GGUF is
broken (a Unigram that splits character by character), so the one made here by
gemma_tokenizer.py replaces it, and is checked token for token against the ids
llama.cpp's own tokenizer gave for the same texts (``expected_ids.json``).

Usage (on the device): python3 convert_gemma.py MODEL.gguf TOKENIZER_DIR EXPECTED.json OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main(gguf_path: str, tok_dir: str, expected_path: str, out_dir: str) -> int:
    t0 = time.monotonic()
    src = Path(gguf_path)
    model = AutoModelForCausalLM.from_pretrained(
        str(src.parent), gguf_file=src.name, dtype=torch.bfloat16
    )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False
    out = Path(out_dir)
    model.save_pretrained(str(out), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(Path(tok_dir) / name, out / name)
    print(f"saved {out} in {time.monotonic() - t0:.1f} s: {model.config.architectures}")
    tok = AutoTokenizer.from_pretrained(str(out))
    cases = json.loads(Path(expected_path).read_text())
    bad = 0
    for case in cases:
        got = tok(case["text"])["input_ids"]
        if got != case["ids"]:
            bad += 1
            print(f"MISMATCH {case['text']!r}: {got[:12]} != {case['ids'][:12]}")
    print(f"tokenizer: {len(cases) - bad}/{len(cases)} texts match llama.cpp's ids")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
