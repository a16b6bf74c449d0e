"""``mmrag index build --engine ray``: Ray reads the KB in blocks, encoder actors embed them.

The pipeline (see :mod:`mmrag.distributed.kb_blocks`): the KB is cut into byte ranges of
``block_docs`` lines; Ray tasks validate and hash each block (pass 1); then a Ray Data pipeline
reads ranges holding exactly ``batch_size`` indexable documents and sends each, as one batch, to a
pool of :class:`EncoderActor` (``num_gpus=1`` each on a GPU cluster, else ``encoder_cpus`` CPUs),
and streams the embeddings to the driver in KB order.  The driver writes them into the
single-process build's spool (:func:`mmrag.indices.build_index_from_embeddings`), which trains the
FAISS index on the same seeded sample, cuts the same shards (``shard_size``) and writes the same
manifest.  Because the encoder sees the same batches as in a local build, the embeddings are
bit-identical: same document ids, same FAISS files, same search results, for any factory.

What stays on the driver, and why: adding vectors to FAISS and writing the index.  Adding is
memory-bound and cheap next to encoding (a Flat add of 200 k x 384 takes about a second), and one
writer keeps the temp-folder-then-rename publication that makes a crashed build leave nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.distributed.cluster import cluster_gpus, connect
from mmrag.distributed.kb_blocks import encode_groups, plan_blocks, raise_scan_error, read_rows, scan_block
from mmrag.errors import InputError
from mmrag.indices.manifest import INDEX_KINDS, IndexManifest, KBHasher

DEFAULT_BLOCK_DOCS = 10_000


class EncoderActor:
    """One encoder per actor, loaded once; each call embeds one batch of the local build."""

    def __init__(
        self, encoder_spec: dict[str, Any], kind: str, trust_code: bool = False, fingerprint: str | None = None
    ) -> None:
        from mmrag.indices.build import _multimodal_encoder
        from mmrag.indices.registry import create_encoder
        from mmrag.registry import allow_code

        with allow_code(trust_code):  # the driver's --allow-code, no more
            enc = create_encoder(encoder_spec)
        self.encoder = _multimodal_encoder(enc) if kind == "multimodal" else enc
        self.kind = kind
        # The manifest records the driver's fingerprint; an actor on another machine or device can
        # resolve the same spec differently (precision "auto": bf16 on a CPU that has it, fp32 on a
        # GPU), and its vectors must not be filed under the driver's encoder.
        got = getattr(self.encoder, "fingerprint", None)
        if fingerprint is not None and got != fingerprint:
            raise InputError(
                f"this worker's encoder is {got}, the driver's {fingerprint}: set the encoder's options "
                "(e.g. precision) explicitly so that every machine builds the same one",
                field="encoder",
            )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from mmrag.schema import ImageRef

        texts = [str(t) for t in batch["text"]]
        images = [ImageRef(path=str(p)) for p in batch["image"]] if self.kind != "text" else []
        if self.kind == "text":
            out = self.encoder.encode_text(texts)
        elif self.kind == "visual":
            out = self.encoder.encode_image(images)
        else:
            out = self.encoder.encode_pairs(texts, images)
        return {
            "group": batch["group"],
            "doc_id": batch["doc_id"],
            "modality": batch["modality"],
            "vector": np.asarray(out, dtype=np.float32),
        }


class _BlockProgress:
    """One rich line: KB blocks scanned, encoder batches done of total, documents, documents/s."""

    def __init__(self, blocks: int, batches: int, enabled: bool) -> None:
        self.blocks, self.batches, self.enabled = blocks, batches, enabled
        self.t0, self.docs = time.perf_counter(), 0
        self._p: Any = None

    def __enter__(self) -> _BlockProgress:
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = Progress(
                TextColumn(f"[bold]ray index build[/] {self.blocks} KB blocks"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} batches"),
                TextColumn("{task.fields[docs]} docs, {task.fields[rate]} docs/s"),
                TimeElapsedColumn(),
                transient=True,
            )
            self._p.__enter__()
            self._task = self._p.add_task("build", total=self.batches, docs=0, rate="-")
        return self

    def advance(self, docs: int) -> None:
        self.docs += docs
        if self._p is not None:
            rate = self.docs / max(time.perf_counter() - self.t0, 1e-9)
            self._p.update(self._task, advance=1, docs=self.docs, rate=f"{rate:,.0f}")

    def __exit__(self, *exc: Any) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


def build_index_ray(
    kb: str | Path,
    encoder_spec: dict[str, Any],
    kind: str,
    factory: str = "Flat",
    out: str | Path = "index",
    *,
    address: str | None = None,
    pool_size: int | None = None,
    block_docs: int = DEFAULT_BLOCK_DOCS,
    encoder_cpus: float = 1,
    progress: bool | None = None,
    stats: dict[str, Any] | None = None,
    **settings: Any,
) -> IndexManifest:
    """Build the index ``build_index(iter_kb(kb), create_encoder(encoder_spec), kind, ...)`` would
    build, with parsing and encoding on a Ray cluster.  ``settings``: the local build's own
    (:class:`~mmrag.indices.build.IndexSettings`: ``batch_size``, ``shard_size``, ``train_size``,
    ``seed``, ``search_params``, ``threads``, ``device``, ``include_title``).  ``pool_size``:
    encoder actors (default: one per GPU, else one per ``encoder_cpus`` of the cluster's CPUs,
    leaving one for parsing).  ``stats``, when given, receives where the time went (scan, encode
    pipeline, FAISS)."""
    from mmrag.indices.build import IndexSettings, prepared_encoder, write_encoded
    from mmrag.indices.registry import create_encoder
    from mmrag.registry import code_allowed

    s = IndexSettings(**settings)
    batch_size, include_title = s.batch_size, s.include_title

    kb = Path(kb)
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind '{kind}' (text | visual | multimodal)", field="kind")
    if not kb.is_file():
        raise InputError("knowledge base file not found", path=kb)
    if block_docs < 1 or batch_size < 1:
        raise InputError("block size and batch size must be at least 1", field="--batch-size")
    # on the driver for its dim / fingerprint / spec (weights load lazily); a bad factory string
    # fails before any work is sent out
    enc = prepared_encoder(create_encoder(encoder_spec), kind, factory)
    ray = connect(address)
    from ray.data import ActorPoolStrategy, DataContext

    gpus = cluster_gpus()
    if pool_size is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        pool_size = gpus or max(1, int((cpus - 1) // max(encoder_cpus, 1e-9)))
    t0 = time.perf_counter()
    path = str(kb.resolve())
    blocks = plan_blocks(kb, block_docs)
    scan = ray.remote(num_cpus=0.5)(scan_block)
    scanned = sorted(ray.get([scan.remote(path, b, kind) for b in blocks]), key=lambda r: r["block"])
    hasher = KBHasher()
    for r in scanned:  # the first bad record in KB order, as the local build reports it
        if r["error"] is not None:
            raise_scan_error(r["error"])
        hasher.merge(r["hasher"])
    offsets = np.concatenate([r["offsets"] for r in scanned]) if scanned else np.zeros(0, np.int64)
    lines = np.concatenate([r["lines"] for r in scanned]) if scanned else np.zeros(0, np.int64)
    groups = encode_groups(offsets, lines, batch_size, kb.stat().st_size)
    timing: dict[str, Any] = {
        "pool_size": int(pool_size),
        "blocks": len(blocks),
        "batches": len(groups),
        "gpus": gpus,
        "docs": hasher.count,
        "scan_s": time.perf_counter() - t0,
    }
    options = DataContext.get_current().execution_options
    keep_order, options.preserve_order = options.preserve_order, True  # batches reach the spool in KB order
    show = progress if progress is not None else len(offsets) >= 2048

    def batches() -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        if not groups:
            return
        ds = ray.data.from_items(groups, override_num_blocks=len(groups))
        ds = ds.map_batches(
            _read_group,
            batch_size=1,
            num_cpus=0.25,
            batch_format="numpy",
            fn_kwargs={"path": path, "kind": kind, "include_title": include_title},
        )
        ds = ds.map_batches(
            EncoderActor,
            batch_size=None,
            batch_format="numpy",
            compute=ActorPoolStrategy(size=int(pool_size)),
            fn_constructor_kwargs={
                "encoder_spec": encoder_spec,
                "kind": kind,
                "trust_code": code_allowed(),
                "fingerprint": enc.fingerprint,
            },
            num_gpus=1 if gpus else 0,
            num_cpus=1 if gpus else encoder_cpus,
        )
        t1 = time.perf_counter()
        with _BlockProgress(len(blocks), len(groups), bool(show)) as bar:
            for b in ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=2):
                if not len(b["doc_id"]):
                    continue
                yield (
                    [str(i) for i in b["doc_id"]],
                    [str(m) for m in b["modality"]],
                    np.ascontiguousarray(b["vector"], dtype=np.float32),
                )
                bar.advance(len(b["doc_id"]))
        timing["encode_s"] = time.perf_counter() - t1

    try:
        manifest = write_encoded(batches(), out, enc, kind, factory, hasher.hexdigest(), s, progress=False, source=kb)
    finally:
        options.preserve_order = keep_order
    timing["total_s"] = time.perf_counter() - t0
    timing["faiss_s"] = timing["total_s"] - timing["scan_s"] - timing.get("encode_s", 0.0)
    if stats is not None:
        stats.update(timing)
    return manifest


def _read_group(batch: dict[str, np.ndarray], path: str, kind: str, include_title: bool) -> dict[str, Any]:
    """Pass 2's read stage: one group (one encoder batch) per call."""
    rows: dict[str, list] = {"group": [], "doc_id": [], "modality": [], "text": [], "image": []}
    for j in range(len(batch["group"])):
        g = {k: int(batch[k][j]) for k in ("group", "start", "stop", "line")}
        for k, v in read_rows(path, g, kind, include_title).items():
            rows[k].extend(v)
    return {k: np.asarray(v, dtype=np.int64 if k == "group" else object) for k, v in rows.items()}
