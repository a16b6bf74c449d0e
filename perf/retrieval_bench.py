"""Retrieval benchmark: exact numpy vs the default index, mmrag's query-path overhead, llama-index.

Run:  .venv/bin/python perf/retrieval_bench.py            # 1 M x 384 (slow on 2 cores: minutes)
      .venv/bin/python perf/retrieval_bench.py --quick    # 100 k x 384
      .venv/bin/python perf/retrieval_bench.py --n 300000

Data: structured, not uniform noise — ``--clusters`` Gaussian cluster centres, and inside each
cluster a 16-d latent Gaussian projected to ``--dim`` plus small isotropic noise (real embeddings
live near low-dimensional manifolds; in iid noise no neighbour is worth finding).  Queries are new
draws from the same distribution.  Vectors are generated and written chunk by chunk.

Measured side by side, same queries, k = 10, best of ``--repeat`` timings:
1. exact numpy search (BLAS ``Q @ X.T`` in query blocks + in-place negation + argpartition + sort)
   — it is also the ground truth for recall;
2. the index mmrag's default config picks (``factory="auto"``: HNSW32, efSearch 128 above 200 k
   vectors) built by ``build_index_from_embeddings`` in a subprocess whose peak RSS is measured;
3. raw FAISS search on that index vs mmrag's ``Index.search`` (id mapping) and
   ``DenseRetriever.retrieve_vectors`` (``Hit`` objects): the overhead mmrag adds;
4. llama-index ``FaissVectorStore.query`` (its query path: one query per call), over the index its
   documentation builds (``IndexFlatL2`` on the same vectors) and over mmrag's HNSW index;
5. llama-index ``SimpleVectorStore`` (its default in-memory store) at ``--simple-n`` vectors.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LATENT = 16


def gen_chunk(seed: int, chunk: int, rows: int, dim: int, clusters: int) -> np.ndarray:
    base = np.random.default_rng(seed)
    centres = base.standard_normal((clusters, dim)).astype(np.float32)
    proj = (0.6 * base.standard_normal((LATENT, dim))).astype(np.float32)
    rng = np.random.default_rng([seed, chunk])
    lab = rng.integers(0, clusters, rows)
    x = centres[lab] + rng.standard_normal((rows, LATENT)).astype(np.float32) @ proj
    x += 0.1 * rng.standard_normal((rows, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def generate(path: Path, n: int, dim: int, clusters: int, chunk: int = 65536) -> None:
    with open(path, "wb") as fh:
        for c, lo in enumerate(range(0, n, chunk)):
            fh.write(gen_chunk(0, c, min(chunk, n - lo), dim, clusters).tobytes())


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def build_child(args: argparse.Namespace) -> None:
    """Subprocess: stream the vector file into build_index_from_embeddings; report time and RSS."""
    import faiss  # noqa: F401
    import pyarrow  # noqa: F401

    from mmrag.indices import build_index_from_embeddings

    n, dim, batch = args.n, args.dim, args.batch
    base = rss_mb()

    def batches():
        for lo in range(0, n, batch):
            m = min(batch, n - lo)
            x = np.fromfile(args.data, dtype=np.float32, count=m * dim, offset=lo * dim * 4).reshape(m, dim)
            yield [f"d{i:08d}" for i in range(lo, lo + m)], ["text"] * m, x

    t0 = time.perf_counter()
    m = build_index_from_embeddings(
        batches(),
        args.out,
        dim=dim,
        kind="text",
        encoder_fingerprint="bench:vectors",
        kb_content_hash="bench",
        factory=args.factory,
        threads=args.threads,
        add_batch=batch,
        search_params=json.loads(args.search_params),
    )
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    index_mb = sum(s.bytes for s in m.shards) / 2**20
    print(
        json.dumps(
            {
                "build_s": secs,
                "peak_rss_mb": peak,
                "baseline_rss_mb": base,
                "index_mb": index_mb,
                "batch_mb": batch * dim * 4 / 2**20,
                "factory": m.factory,
                "search_params": m.search_params,
            }
        )
    )


def best(fn, repeat: int) -> tuple[float, object]:
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def numpy_exact(x: np.ndarray, q: np.ndarray, k: int, block: int = 100) -> np.ndarray:
    out = np.empty((len(q), k), dtype=np.int64)
    for i in range(0, len(q), block):
        s = q[i : i + block] @ x.T
        s *= -1.0
        part = np.argpartition(s, k, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(s, part, 1), axis=1, kind="stable")
        out[i : i + block] = np.take_along_axis(part, order, 1)
    return out


def recall(rows: np.ndarray, truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(a[:k]) & set(b)) / k for a, b in zip(rows, truth)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="n = 100 000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--clusters", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--factory", default="auto")
    ap.add_argument("--search-params", default="{}", help='JSON, e.g. {"efSearch": 128}')
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=65536, help="rows per build batch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--li-queries", type=int, default=200, help="queries through llama-index (one per call)")
    ap.add_argument("--simple-n", type=int, default=100_000)
    ap.add_argument("--simple-queries", type=int, default=5)
    ap.add_argument(
        "--workdir",
        default=str(Path(tempfile.gettempdir()) / "mmrag_retrieval_bench"),
        help="where the vectors and the index are written (default: under the system temp folder)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the vector file and index")
    ap.add_argument("--_build", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n = 100_000
    if args._build:
        return build_child(args)

    import faiss

    from mmrag.indices import load_index
    from mmrag.retrieval import DenseRetriever

    faiss.omp_set_num_threads(args.threads)
    wd = Path(args.workdir)
    wd.mkdir(parents=True, exist_ok=True)
    data, out = wd / f"vectors_{args.n}_{args.dim}.f32", wd / f"index_{args.n}"
    n, dim, k = args.n, args.dim, args.k
    res: dict = {
        "n": n,
        "dim": dim,
        "clusters": args.clusters,
        "queries": args.queries,
        "k": k,
        "threads": args.threads,
        "faiss": faiss.__version__,
    }
    t0 = time.perf_counter()
    if not data.exists() or data.stat().st_size != n * dim * 4:
        generate(data, n, dim, args.clusters)
    res["generate_s"] = time.perf_counter() - t0
    q = gen_chunk(0, 10_000_019, args.queries, dim, args.clusters)  # a chunk id no data chunk uses

    print(f"[bench] building the default index ({args.factory}) on {n} x {dim} in a subprocess ...", flush=True)
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--_build",
            "--data",
            str(data),
            "--out",
            str(out),
            "--n",
            str(n),
            "--dim",
            str(dim),
            "--factory",
            args.factory,
            "--search-params",
            args.search_params,
            "--threads",
            str(args.threads),
            "--batch",
            str(args.batch),
        ],
        capture_output=True,
        text=True,
    )
    if child.returncode != 0:
        sys.exit(child.stderr)
    b = json.loads(child.stdout.strip().splitlines()[-1])
    res["build"] = b
    limit = 1.5 * (b["index_mb"] + b["batch_mb"])
    res["build"]["rss_limit_mb"] = limit
    print(
        f"[bench] build {b['build_s']:.1f} s, factory {b['factory']} {b['search_params']}, index "
        f"{b['index_mb']:.0f} MiB, peak RSS {b['peak_rss_mb']:.0f} MiB (growth "
        f"{b['peak_rss_mb'] - b['baseline_rss_mb']:.0f} MiB) vs limit 1.5 x (index + batch) = {limit:.0f} MiB",
        flush=True,
    )

    # exact numpy over the vectors held once (in a Flat index's storage, viewed without a copy)
    flat = faiss.IndexFlatL2(dim)
    for lo in range(0, n, 262144):
        m = min(262144, n - lo)
        flat.add(np.fromfile(data, dtype=np.float32, count=m * dim, offset=lo * dim * 4).reshape(m, dim))
    x = faiss.rev_swig_ptr(flat.get_xb(), n * dim).reshape(n, dim)
    t_np, truth = best(functools.partial(numpy_exact, x, q, k), 1 if n > 300_000 else args.repeat)
    res["numpy"] = {"s": t_np, "qps": len(q) / t_np}
    print(f"[bench] numpy exact: {t_np:.2f} s = {len(q) / t_np:.0f} QPS", flush=True)

    index = load_index(out, verify="size", threads=args.threads)
    raw = index.shards[0]
    dense = DenseRetriever(index)
    # interleaved rounds (raw, Index.search, DenseRetriever back to back); the overhead is the median
    # of the per-round ratios, which is robust to load drifting on a shared machine
    t_raw = t_idx = t_dense = float("inf")
    r_idx, r_dense = [], []
    for _ in range(max(args.repeat, 7)):
        a, (_, raw_rows) = best(lambda: raw.search(q, k), 1)
        b_ = best(lambda: index.search(q, k), 1)[0]
        c, hits = best(lambda: dense.retrieve_vectors(q, k), 1)
        r_idx.append(b_ / a - 1)
        r_dense.append(c / a - 1)
        t_raw, t_idx, t_dense = min(t_raw, a), min(t_idx, b_), min(t_dense, c)
    rec = recall(raw_rows, truth)
    res["index"] = {
        "factory": index.manifest.factory,
        "search_params": index.manifest.search_params,
        "raw_s": t_raw,
        "raw_qps": len(q) / t_raw,
        "recall@10": rec,
        "speedup_vs_numpy": t_np / t_raw,
        "mmrag_index_s": t_idx,
        "mmrag_dense_s": t_dense,
        "overhead_index": float(np.median(r_idx)),
        "overhead_dense": float(np.median(r_dense)),
        "overhead_dense_rounds": r_dense,
    }
    assert [h.doc_id for h in hits[0]] == [f"d{r:08d}" for r in raw_rows[0]]
    print(
        f"[bench] {index.manifest.factory} raw faiss: {t_raw:.3f} s = {len(q) / t_raw:.0f} QPS, recall@10 "
        f"{rec:.3f}, {t_np / t_raw:.1f}x numpy",
        flush=True,
    )
    print(
        f"[bench] mmrag Index.search {t_idx:.3f} s (median overhead {100 * np.median(r_idx):+.1f} %), "
        f"DenseRetriever (Hit objects) {t_dense:.3f} s (median overhead {100 * np.median(r_dense):+.1f} %)",
        flush=True,
    )

    from llama_index.core.vector_stores.types import VectorStoreQuery
    from llama_index.vector_stores.faiss import FaissVectorStore

    nq = min(args.li_queries, len(q))
    qlists = [row.tolist() for row in q[:nq]]

    def li_path(store, count):
        return [store.query(VectorStoreQuery(query_embedding=v, similarity_top_k=k)) for v in qlists[:count]]

    mm_label = "mmrag-" + index.manifest.factory.lower()
    for label, faiss_index, count in (("flatl2", flat, min(nq, 50 if n > 300_000 else nq)), (mm_label, raw, nq)):
        store = FaissVectorStore(faiss_index=faiss_index)
        t_li, _ = best(functools.partial(li_path, store, count), 1)
        li_qps = count / t_li
        res[f"llamaindex_faiss_{label}"] = {
            "queries": count,
            "s": t_li,
            "qps": li_qps,
            "mmrag_speedup": (len(q) / t_dense) / li_qps,
        }
        print(
            f"[bench] llama-index FaissVectorStore.query over {label}: {li_qps:.1f} QPS -> mmrag "
            f"DenseRetriever is {(len(q) / t_dense) / li_qps:.1f}x faster",
            flush=True,
        )
    del flat, x

    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.core.vector_stores.simple import SimpleVectorStoreData

    sn = min(args.simple_n, n)
    xs = np.fromfile(data, dtype=np.float32, count=sn * dim).reshape(sn, dim)
    t0 = time.perf_counter()
    simple = SimpleVectorStore(
        data=SimpleVectorStoreData(embedding_dict={f"d{i:08d}": xs[i].tolist() for i in range(sn)})
    )
    t_fill = time.perf_counter() - t0
    sq = min(args.simple_queries, len(q))
    t_s, _ = best(
        lambda: [simple.query(VectorStoreQuery(query_embedding=v, similarity_top_k=k)) for v in qlists[:sq]], 1
    )
    res["llamaindex_simple"] = {"n": sn, "fill_s": t_fill, "queries": sq, "qps": sq / t_s}
    print(f"[bench] llama-index SimpleVectorStore at {sn}: {sq / t_s:.2f} QPS (filled in {t_fill:.1f} s)", flush=True)
    print(json.dumps(res, indent=2))
    if not args.keep:
        import shutil

        data.unlink(missing_ok=True)
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
