"""Build a Hugging Face ``tokenizer.json`` for Gemma 3 from its GGUF (tokens and scores).

Why by hand: transformers 5.17 builds a Unigram tokenizer from this GGUF that splits text
character by character, so vLLM's generations are garbage. The GGUF's vocabulary is a
SentencePiece BPE (``tokenizer.ggml.model = llama``), so it is rebuilt here as a BPE:
merges derived from the scores (a pair is merged when the joined piece is in the vocabulary,
ranked by that piece's score, as SentencePiece does), byte fallback to ``<0xNN>``, spaces
normalised to ``▁``, control tokens special, user-defined tokens (newline and space runs,
HTML tags) matched on the raw text before normalisation, and ``<bos>`` prepended.

Usage: python gemma_tokenizer.py MODEL.gguf OUT_DIR   (needs the packages gguf, tokenizers)
Writes OUT_DIR/{tokenizer.json,tokenizer_config.json,special_tokens_map.json}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

CONTROL, USER_DEFINED = 3, 4


def read_vocab(path: str) -> tuple[list[str], list[float], list[int], dict[str, int]]:
    fields = gguf.GGUFReader(path).fields

    def array(name: str) -> list[object]:
        f = fields[name]
        return [f.parts[i] for i in f.data]

    tokens = [bytes(p).decode("utf-8") for p in array("tokenizer.ggml.tokens")]
    scores = [float(p[0]) for p in array("tokenizer.ggml.scores")]  # type: ignore[index]
    types = [int(p[0]) for p in array("tokenizer.ggml.token_type")]  # type: ignore[index]
    ids = {
        k: int(fields[f"tokenizer.ggml.{k}_token_id"].contents())
        for k in ("bos", "eos", "unknown", "padding")
    }
    return tokens, scores, types, ids


def merges_from_scores(tokens: list[str], scores: list[float], types: list[int]):
    vocab = {t: i for i, t in enumerate(tokens)}
    found: list[tuple[float, int, int, str, str]] = []
    for i, piece in enumerate(tokens):
        if types[i] in (CONTROL, USER_DEFINED) or len(piece) < 2:
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                found.append((-scores[i], vocab[left], vocab[right], left, right))
    found.sort()
    return [(left, right) for _, _, _, left, right in found]


def build(path: str) -> tuple[Tokenizer, dict[str, int], list[str]]:
    tokens, scores, types, ids = read_vocab(path)
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = merges_from_scores(tokens, scores, types)
    unk = tokens[ids["unknown"]]
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token=unk, byte_fallback=True, fuse_unk=True)
    )
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    bos = tokens[ids["bos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, ids["bos"])]
    )
    control = [t for t, k in zip(tokens, types) if k == CONTROL]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    user = [t for t, k in zip(tokens, types) if k == USER_DEFINED]
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in user])
    named = {k: ids[k] for k in ids}
    return tok, named, tokens


def main(gguf_path: str, out_dir: str) -> None:
    tok, ids, tokens = build(gguf_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    special = {
        "bos_token": tokens[ids["bos"]],
        "eos_token": tokens[ids["eos"]],
        "unk_token": tokens[ids["unknown"]],
        "pad_token": tokens[ids["padding"]],
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": True,
        "add_eos_token": False,
        "model_max_length": 32768,
        "clean_up_tokenization_spaces": False,
        **special,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n")
    print(f"wrote {out}/tokenizer.json: {tok.get_vocab_size()} tokens")


if __name__ == "__main__":
    main(*sys.argv[1:3])
