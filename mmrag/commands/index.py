"""``mmrag index build | info | eval``: parse flags, call mmrag.indices / mmrag.retrieval, print."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import typer

from mmrag.commands._engine import ADDRESS, ENGINE
from mmrag.errors import InputError
from mmrag.registry import allow_code as trusting_code
from mmrag.schema import Document
from mmrag.util import iter_jsonl

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Build, inspect and evaluate FAISS indices over a knowledge base.",
)

#: encoder used when --encoder is not given, per index kind
DEFAULT_ENCODER = {"text": "minilm", "visual": "color-layout", "multimodal": "fusion"}


class KBFile:
    """``kb.jsonl`` (KBRecord lines) streamed as Documents; image paths are relative to the file.

    Why a class and not a generator: an index build over millions of documents wants a progress
    bar with a total, and a generator has no length.  ``__length_hint__`` (what
    :func:`operator.length_hint` reads) counts the file's lines in one fast byte scan; it is an
    estimate, as the protocol allows (a blank line counts), and 0 (unknown) for a ``.gz`` file,
    which would cost a whole decompression to count."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __iter__(self) -> Iterator[Document]:
        from mmrag.distributed.kb_blocks import kb_document

        for line, obj in iter_jsonl(self.path):
            yield kb_document(obj, self.path, line)

    def __length_hint__(self) -> int:
        if self.path.suffix == ".gz" or not self.path.is_file():
            return 0
        lines, last = 0, b"\n"
        with open(self.path, "rb") as fh:
            while chunk := fh.read(1 << 22):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        return lines + (last != b"\n")


def iter_kb(path: str | Path) -> KBFile:
    """Stream ``kb.jsonl`` as Documents (see :class:`KBFile`)."""
    return KBFile(path)


def _encoder_spec(name: str | None, kwargs: str | None, kind: str) -> dict:
    try:
        kw = json.loads(kwargs) if kwargs else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--encoder-kwargs is not JSON ({exc.msg})", field="--encoder-kwargs") from None
    if not isinstance(kw, dict):
        raise InputError("--encoder-kwargs must be a JSON object", field="--encoder-kwargs")
    return {"name": name or DEFAULT_ENCODER[kind], "kwargs": kw}


@app.command("build")
def build(
    kb: Path = typer.Option(..., "--kb", help="kb.jsonl (one KBRecord per line)"),
    kind: str = typer.Option(
        ...,
        "--kind",
        "--modality",
        help="what to index, named as the scenario modalities are: text | image | "
        "multimodal ('visual', the index kind of image documents, is accepted)",
    ),
    out: Path = typer.Option(..., "--out", help="index folder to write (replaced atomically)"),
    factory: str = typer.Option("auto", "--factory", help="FAISS index_factory string, or 'auto'"),
    encoder: str | None = typer.Option(
        None, "--encoder", help="minilm | sentence-transformers | open-clip | color-layout | fusion | pkg.mod:Factory"
    ),
    encoder_kwargs: str | None = typer.Option(None, "--encoder-kwargs", help='JSON, e.g. {"arch": "ViT-S-32-alt"}'),
    shard_size: int | None = typer.Option(None, "--shard-size", help="vectors per shard file"),
    batch_size: int = typer.Option(256, "--batch-size", min=1, help="documents encoded per batch"),
    threads: int | None = typer.Option(None, "--threads", help="FAISS CPU threads"),
    device: str = typer.Option("cpu", "--device", help="cpu | auto | gpu (FAISS)"),
    allow_code: bool = typer.Option(False, "--allow-code", help="allow --encoder pkg.mod:Class (trusted code only)"),
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    pool_size: int | None = typer.Option(
        None, "--pool-size", help="--engine ray: encoder actors (default: one per GPU, else one per spare CPU)"
    ),
    block_docs: int = typer.Option(10_000, "--block-docs", min=1, help="--engine ray: KB lines per block"),
) -> None:
    """Encode a knowledge base and write a FAISS index with its manifest."""
    from mmrag.distributed import check_engine
    from mmrag.indices import INDEX_KINDS, build_index, create_encoder

    check_engine(engine, address)
    kind = {"image": "visual"}.get(kind, kind)  # one vocabulary with --negative-modality / --positive-modality
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind '{kind}' (text | image | multimodal)", field="--kind")
    if not kb.is_file():
        raise InputError("knowledge base file not found", path=kb)
    if shard_size is not None and shard_size < 1:
        raise InputError(f"must be at least 1, got {shard_size}", field="--shard-size")
    if batch_size < 1:
        raise InputError(f"must be at least 1, got {batch_size}", field="--batch-size")
    from mmrag.indices.spool import clean_stale_spools

    removed, freed = clean_stale_spools(out)
    if removed:
        typer.echo(
            f"removed {removed} stale build folder(s) of {out} left by killed builds ({freed / 1e6:.1f} MB freed)",
            err=True,
        )
    spec = _encoder_spec(encoder, encoder_kwargs, kind)
    with trusting_code(allow_code):
        if engine == "ray":
            from mmrag.distributed import build_index_ray

            m = build_index_ray(
                kb,
                spec,
                kind,
                factory=factory,
                out=out,
                address=address,
                pool_size=pool_size,
                batch_size=batch_size,
                block_docs=block_docs,
                shard_size=shard_size,
                threads=threads,
                device=device,
            )
        else:
            m = build_index(
                iter_kb(kb),
                create_encoder(spec),
                kind,
                factory=factory,
                out=out,
                shard_size=shard_size,
                batch_size=batch_size,
                threads=threads,
                device=device,
                source=kb,
            )
    typer.echo(
        f"wrote {m.kind} index to {out}: {m.count} vectors, dim {m.dim}, factory {m.factory}, {len(m.shards)} shard(s)"
    )


@app.command("info")
def info(
    path: Path = typer.Argument(..., help="index folder"),
    verify: str = typer.Option("size", "--verify", help="checksum | size | none"),
) -> None:
    """Print an index's manifest summary (verifying its files)."""
    from mmrag.indices import describe, load_index

    if verify not in ("checksum", "size", "none"):
        raise InputError("--verify must be checksum, size or none", field="--verify")
    typer.echo(json.dumps(describe(load_index(path, verify=verify)), indent=2))  # type: ignore[arg-type]


@app.command("eval")
def eval_(
    path: Path = typer.Argument(..., help="index folder"),
    benchmark: str = typer.Option(..., "--benchmark", help="benchmark name (e.g. demo)"),
    source: str | None = typer.Option(None, "--source", help="benchmark data folder or file"),
    k: str = typer.Option("1,5,10", "--k", help="comma-separated cut-offs"),
    limit: int | None = typer.Option(None, "--limit", help="first N samples"),
    json_out: Path | None = typer.Option(None, "--json", help="also write the figures as JSON"),
) -> None:
    """Recall@k and MRR of the benchmark's gold documents, overall and per gold modality."""
    import itertools

    from mmrag.benchmarks import BENCHMARKS
    from mmrag.retrieval import DenseRetriever, evaluate_retrieval
    from mmrag.util import atomic_write_json

    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError:
        raise InputError("--k must be comma-separated integers", field="--k") from None
    retriever = DenseRetriever(path, verify="size")
    modality_of = dict(zip(retriever.index.doc_ids.tolist(), retriever.index.modalities.tolist()))
    samples = BENCHMARKS.create(benchmark, source).samples()
    if limit is not None:
        samples = itertools.islice(samples, limit)
    result = evaluate_retrieval(retriever, samples, modality_of, ks=ks)
    result.update({"index": str(path), "benchmark": benchmark})
    if json_out is not None:
        atomic_write_json(json_out, result)
    typer.echo(format_eval(result, ks))


def format_eval(result: dict, ks: list[int]) -> str:
    cols = [f"recall@{k}" for k in ks] + ["mrr"]
    lines = [f"{'gold modality':<14} {'n':>6} " + " ".join(f"{c:>10}" for c in cols)]
    for group, m in sorted(result["groups"].items(), key=lambda kv: (kv[0] != "all", kv[0])):
        lines.append(f"{group:<14} {m['n']:>6} " + " ".join(f"{m[c]:>10.3f}" for c in cols))
    lines.append(f"skipped (no gold document in this index or no usable query part): {result['skipped']}")
    return "\n".join(lines)
