"""Builders that turn VLM-DeflectionBench's six source datasets into mmrag's DeflectionBench files.

``build_deflection(source, data, out, kb=..., images=..., limit=..., options=...)`` reads one
source in its published format and writes ``out`` (samples, :class:`DeflectionRecord` per line),
``<stem>.kb.jsonl`` (knowledge-base documents, :class:`KBRecord` per line) and ``<stem>.images/``.
Builders are looked up by name in :data:`SOURCES` (``infoseek``, ``evqa``, ``webqa``, ``viquae``,
``mragbench``, ``mmdocrag``; third parties add theirs through the entry-point group
``mmrag.deflection_sources``).  See docs/sources.md for every mapping choice.
"""

from mmrag.benchmarks.sources import evqa, infoseek, mmdocrag, mragbench, viquae, webqa  # noqa: F401  (register)
from mmrag.benchmarks.sources.base import (
    SOURCES,
    BuildContext,
    BuildStats,
    SourceBuilder,
    SourceOptions,
    build_deflection,
    images_dir_for,
    kb_path_for,
)

__all__ = [
    "SOURCES",
    "BuildContext",
    "BuildStats",
    "SourceBuilder",
    "SourceOptions",
    "build_deflection",
    "images_dir_for",
    "kb_path_for",
]
