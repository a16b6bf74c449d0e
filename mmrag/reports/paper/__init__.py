"""The three papers' tables and figures, named as in the papers, from runs (and a curation).

Each paper is a registered :class:`Paper`: an ordered list of :class:`Artifact` entries, one per
table or figure *of the paper* (``table_4``, ``figure_3`` ...), including those mmrag cannot make
(human studies, qualitative examples), so that ``paper.md`` indexes the whole paper and says of
each one whether it was made or why not.  An artifact names the sweep presets whose cells it reads
(``presets``); its rows are the run rows whose scenario id belongs to those presets, so a run that
holds every preset at once (``mmrag reproduce``) still gives each table exactly its own cells.

:func:`write_paper` writes ``table_N.md/.csv`` (our rows, then the paper's published rows in the
same columns), ``figure_N.png/.svg`` with the numbers each figure draws as ``figure_N.csv``, the
one-model comparison when ``paper_model`` is given (``table_N_vs_paper.md/.csv``; see
:mod:`mmrag.reports.paper.published`) and ``paper.md``; every one of them says what data, model
and judge made it (:mod:`mmrag.reports.paper.provenance`).
Nothing dispatches on paper or artifact names: the papers register themselves below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.tables import CIOptions


@dataclass
class Context:
    """What an artifact is built from: the run frame, the options, an optional curation folder
    and the run's records (loaded on first use: only dataset statistics need them)."""

    df: pd.DataFrame
    opts: CIOptions = field(default_factory=CIOptions)
    curation: Path | None = None
    run_dirs: tuple[Path, ...] = ()
    _records: list | None = None

    def rows(self, presets: tuple[str, ...]) -> pd.DataFrame:
        """The rows of the cells of ``presets`` (by scenario id)."""
        from mmrag.scenarios import load_sweep

        ids = {s.id for p in presets for s in load_sweep(p).expand()}
        return self.df[self.df["scenario_id"].isin(ids)]

    def records(self) -> list:
        if self._records is None:
            from mmrag.runs.frame import read_records

            self._records = [r for d in self.run_dirs for r in read_records(d)]
        return self._records


#: what an artifact's build returns: a table, or a figure (matplotlib Figure carrying ``.data``)
Built = Any


@dataclass(frozen=True)
class Artifact:
    """One table or figure of a paper.  ``build`` is None for the ones mmrag does not make
    (``why_not`` says why); ``needs`` returns a reason when the inputs at hand cannot make it."""

    id: str
    kind: str  # "table" | "figure"
    title: str
    build: Callable[[Context], Built] | None = None
    presets: tuple[str, ...] = ()
    needs: Callable[[Context], str | None] | None = None
    why_not: str = ""
    note: str = ""
    #: a figure's numbers as a table a person reads (``figure_N.md``), when they are more than it draws
    numbers: Callable[[Context], pd.DataFrame] | None = None
    #: what its numbers are over, for its caption, when that is not its run rows (a curation's samples)
    n_of: Callable[[Context], str] | None = None

    def missing(self, ctx: Context) -> str | None:
        """Why this artifact cannot be made from ``ctx`` (None when it can)."""
        if self.build is None:
            return self.why_not or "not reproducible by a harness"
        if self.needs is not None:
            reason = self.needs(ctx)
            if reason:
                return reason
        if self.presets and ctx.rows(self.presets).empty:
            return f"no records of the preset{'s' if len(self.presets) > 1 else ''} {', '.join(self.presets)}"
        return None


@dataclass(frozen=True)
class Paper:
    name: str
    title: str
    citation: str
    family: str  # the benchmark family whose runs it reads
    artifacts: tuple[Artifact, ...]
    data_file: str  # published numbers, in mmrag/reports/paper_data/
    demo_benchmark: str = "demo"  # the benchmark ``mmrag reproduce`` reads without --benchmark
    curates: bool = False  # its tables need a curation (``--gating-model``)
    judge: str = ""  # how the paper judged its replies (said beside ours in every output)
    triples: bool = False  # its tables give Acc / Defl / Hall triples (unparseable / undecided go beside)

    @property
    def presets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for a in self.artifacts for p in a.presets))


PAPERS: dict[str, Paper] = {}


def register_paper(paper: Paper) -> Paper:
    PAPERS[paper.name] = paper
    return paper


def get_paper(name: str) -> Paper:
    _load_builtin()
    if name not in PAPERS:
        raise InputError(f"unknown paper '{name}'; known: {', '.join(sorted(PAPERS))}", field="--paper")
    return PAPERS[name]


def paper_names() -> list[str]:
    _load_builtin()
    return sorted(PAPERS)


def _load_builtin() -> None:
    import importlib

    for mod in ("deflection", "humblebench", "knowhal"):
        importlib.import_module(f"mmrag.reports.paper.{mod}")


def write_paper(
    name: str,
    df: pd.DataFrame,
    out: str | Path,
    *,
    opts: CIOptions = CIOptions(),
    curation: str | Path | None = None,
    run_dirs: tuple[Path, ...] = (),
    paper_model: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """Write every makeable artifact of paper ``name`` into ``out`` and the ``paper.md`` index;
    returns ``{artifact id: {"made": bool, "files": [...], "why": str}}``."""
    from mmrag.reports.paper.cells import mark_undecided
    from mmrag.reports.paper.write import write_all

    ctx = Context(
        df=df, opts=opts, curation=Path(curation) if curation else None, run_dirs=tuple(Path(d) for d in run_dirs)
    )
    paper = get_paper(name)
    if paper.triples and ctx.run_dirs and len(df):
        ctx.df = mark_undecided(df, ctx.records())
    return write_all(
        paper,
        ctx,
        Path(out),
        paper_model=paper_model,
        model=model,
    )


__all__ = ["Artifact", "Context", "PAPERS", "Paper", "get_paper", "paper_names", "register_paper", "write_paper"]
