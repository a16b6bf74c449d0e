"""How fast InfoSeek's builder finds its pages in a gzip-compressed Wiki6M KB.

``load_wikidata_kb`` streams ``Wiki6M_ver_1_0.jsonl.gz`` (6M pages in the release) and keeps only
the pages the questions name.  Peer / physical limit, in the same run on the same file: the bare
``gzip.open`` + ``json.loads`` loop over every line (what any reader of the file must at least do),
and ``gzip`` decompression alone.  Best of ``--repeats``.

    .venv/bin/python perf/kb_scan_bench.py [--pages 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
import time
from pathlib import Path

from mmrag.benchmarks.sources.wiki import load_wikidata_kb

WORDS = "the of and in a to was is for as on by with he that at from his it an were are which this be".split()


def make_kb(path: Path, pages: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        for i in range(pages):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160)))
            fh.write(
                json.dumps(
                    {
                        "wikidata_id": f"Q{i}",
                        "wikipedia_title": f"Page {i}",
                        "wikipedia_content": text,
                        "wikipedia_image_url": None,
                        "wikipedia_summary": text[:80],
                    }
                )
                + "\n"
            )
    return [f"Q{i}" for i in rng.sample(range(pages), 100)]


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Wiki6M_ver_1_0.jsonl.gz"
        needed = make_kb(path, args.pages)

        def ours():
            assert len(load_wikidata_kb(path, needed)) == 100

        def parse_all():
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                for line in fh:
                    json.loads(line)

        def decompress():
            with gzip.open(path, "rb") as fh:
                while fh.read(1 << 20):
                    pass

        t_ours, t_parse, t_gz = (best(f, args.repeats) for f in (ours, parse_all, decompress))
        size = path.stat().st_size / 2**20
        print(f"{args.pages:,} pages, {size:.1f} MiB gz")
        for name, t in (
            ("gzip decompress only", t_gz),
            ("gzip + json.loads every line", t_parse),
            ("mmrag load_wikidata_kb (100 pages kept)", t_ours),
        ):
            print(f"{name:42s} {t:7.3f} s  {args.pages / t:12,.0f} pages/s")
        print(f"ours / (gzip + json.loads) = {t_ours / t_parse:.2f}x")


if __name__ == "__main__":
    main()
