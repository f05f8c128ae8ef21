#!/usr/bin/env python3
"""Reference vectors for all-MiniLM-L6-v2, computed independently of candle.

A float64 NumPy implementation of the BERT encoder reads model.safetensors directly, then
applies sentence-transformers' mean pooling and L2 normalisation. Token ids come from the
Hugging Face `tokenizers` package with the model's tokenizer.json (truncated at 256, as the
model's sentence_bert_config.json says). The output is the JSON fixture the embedding tests
compare against.

Usage: python3 benches/reference/minilm_reference.py [MODEL_DIR] > benches/reference/minilm_reference.json
Needs: numpy, tokenizers (pip install numpy tokenizers).
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

SENTENCES = [
    "The cat sits on the mat.",
    "A dog is playing fetch in the park with its owner.",
    "Our clinic is open Monday to Friday from 8am to 6pm; call 555-0142 to book.",
    "Quantum entanglement links particles so that measuring one affects the other.",
    "Café naïve résumé: ünïcödé text, 日本語, and emoji 🎉 survive tokenization.",
]


def load_safetensors(path):
    data = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if name.endswith("position_ids"):
            continue  # a buffer of 0..512, not a weight
        if info["dtype"] != "F32":
            raise SystemExit(f"{name}: unsupported dtype {info['dtype']}")
        start, end = info["data_offsets"]
        array = np.frombuffer(data[base + start : base + end], dtype="<f4")
        tensors[name.removeprefix("bert.")] = array.reshape(info["shape"]).astype(np.float64)
    return tensors


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def linear(x, w, prefix):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def encode(w, config, ids):
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hd = x.shape[-1] // heads
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = linear(x, w, p + ".attention.self.query").reshape(n, heads, hd).transpose(1, 0, 2)
        k = linear(x, w, p + ".attention.self.key").reshape(n, heads, hd).transpose(1, 0, 2)
        v = linear(x, w, p + ".attention.self.value").reshape(n, heads, hd).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, heads * hd)
        attn = linear(ctx, w, p + ".attention.output.dense")
        x = layer_norm(attn + x, w[p + ".attention.output.LayerNorm.weight"], w[p + ".attention.output.LayerNorm.bias"], eps)
        inter = gelu(linear(x, w, p + ".intermediate.dense"))
        out = linear(inter, w, p + ".output.dense")
        x = layer_norm(out + x, w[p + ".output.LayerNorm.weight"], w[p + ".output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main():
    model_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "models/all-minilm-l6-v2")
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_safetensors(model_dir / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    cases = []
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence).ids
        vector = encode(weights, config, ids)
        cases.append({"text": sentence, "tokens": len(ids), "vector": [round(float(v), 8) for v in vector]})
    json.dump({"model": "all-minilm-l6-v2", "precision": "float64", "cases": cases}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
