"""``mmrag benchmark build-deflection``: one source dataset -> DeflectionBench files.

Mount either the plain command function :func:`build_deflection_cmd` on the ``benchmark`` group
(``benchmark_app.command("build-deflection")(build_deflection_cmd)``) or the sub-app :data:`app`.
Bad input raises :class:`~mmrag.errors.InputError`, which ``mmrag.cli.main`` turns into one line on
stderr and a non-zero exit.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from mmrag.errors import InputError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Build benchmark files from published source datasets.",
)


@app.callback()
def _group() -> None:
    """Build benchmark files from published source datasets."""


def _parse_options(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", field="--option")
        out[key.strip()] = value.strip()
    return out


@app.command("build-deflection")
def build_deflection_cmd(
    source: str = typer.Option(
        ...,
        "--dataset",
        help="the published source dataset: infoseek | evqa | webqa | viquae "
        "| mragbench | mmdocrag (or an mmrag.deflection_sources entry point)",
    ),
    data: Path = typer.Option(
        ..., "--data", help="the source's question file (JSONL, CSV, JSON, parquet or HF folder)"
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="samples JSONL to write; FILE.kb.jsonl and FILE.images/ go beside it"
    ),
    kb: Path | None = typer.Option(None, "--kb", help="knowledge base file (InfoSeek, E-VQA, ViQuAE)"),
    images: Path | None = typer.Option(None, "--images", help="image folder (or WebQA's imgs.tsv)"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="read at most N source records"),
    option: list[str] | None = typer.Option(
        None, "--option", help="source option KEY=VALUE (see docs/sources.md), repeatable"
    ),
) -> None:
    """Write VLM-DeflectionBench samples, their KB documents and images from one source dataset."""
    from mmrag.benchmarks.sources import build_deflection

    stats = build_deflection(source, data, out, kb=kb, images=images, limit=limit, options=_parse_options(option))
    typer.echo(json.dumps(stats.model_dump(), indent=2))
