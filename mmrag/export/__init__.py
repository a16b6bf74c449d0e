"""Runs in the formats of the tools researchers already use (``mmrag export RUN_DIR --format F``).

* ``inspect``: one Inspect AI eval log per benchmark x model, written with ``inspect_ai``'s own
  log types (the ``inspect`` extra: ``pip install 'mmrag[inspect]'``), so ``inspect view`` and
  ``inspect_ai.log.read_eval_log`` open it (:mod:`mmrag.export.inspect_log`);
* ``lmms-eval``: lmms-eval's ``--log_samples`` output, one ``samples_TASK.jsonl`` per benchmark x
  scenario and a ``results.json`` per model (:mod:`mmrag.export.lmms`).

Formats are registered objects (:data:`EXPORTERS`, entry-point group ``mmrag.exporters``): a
callable ``(records, manifest, out_dir) -> list[Path]``.  Exports read a run and write new files
only; the run directory is never modified.

``mmrag.export`` is at once this package and the function :func:`export` (the module is
callable), so ``mmrag.export(run_dir, "inspect")`` works whichever was imported first.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.outdir import claim
from mmrag.registry import Registry

#: ``EXPORTERS.get(format)(records, manifest, out_dir) -> list[Path]``
EXPORTERS: Registry[list[Path]] = Registry("export format", group="mmrag.exporters")


def _lazy(dotted: str) -> Callable[..., list[Path]]:
    def write(*args: Any, **kwargs: Any) -> list[Path]:
        from mmrag.registry import load_dotted

        return load_dotted(dotted)(*args, **kwargs)

    write.__qualname__ = write.__name__ = f"lazy[{dotted}]"
    return write


EXPORTERS.register("inspect", _lazy("mmrag.export.inspect_log:write_inspect"))
EXPORTERS.register("lmms-eval", _lazy("mmrag.export.lmms:write_lmms_eval"))


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise InputError("no manifest.json here: not a run directory", path=run_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"unreadable manifest ({type(exc).__name__})", path=path) from None
    if not isinstance(data, dict):
        raise InputError("the manifest is not a JSON object", path=path)
    return data


def export(run_dir: str | Path, format: str = "inspect", out: str | Path | None = None) -> Written:
    """Write the run in ``run_dir`` in another tool's ``format`` (``inspect`` | ``lmms-eval``) into
    ``out`` (default ``RUN_DIR/export/FORMAT``); returns the files written."""
    from mmrag.runs.frame import read_records

    run_dir = Path(run_dir)
    writer = EXPORTERS.get(format)
    manifest = {**read_manifest(run_dir), "run_dir": str(run_dir)}
    records = read_records(run_dir)
    if not records:
        raise InputError("the run has no records yet: nothing to export", path=run_dir)
    target = Path(out) if out is not None else run_dir / "export" / format
    claim(target, "export", check=out is not None)  # --out: never into a folder of other files
    written = writer(records, manifest, target)
    if not written:  # lmms-eval has no failed samples: a run of failures has nothing to write
        raise InputError(f"nothing to export as {format}: every cell of this run failed", path=run_dir)
    from mmrag.runs.state import records_state

    return Written(written, notice=records_state(run_dir, records, manifest=manifest).notice())


class Written(list):
    """The files an export wrote; ``notice`` says ``incomplete: X of Y cells`` for an unfinished run."""

    def __init__(self, paths: list[Path], notice: str | None = None) -> None:
        super().__init__(paths)
        self.notice = notice


def slug(text: str) -> str:
    """A file-name-safe form of a model or task name (``openai:m@host`` -> ``openai_m_host``)."""
    out = "".join(c if c.isalnum() or c in "-." else "_" for c in text)
    return "_".join(p for p in out.split("_") if p) or "x"


class _CallableModule(types.ModuleType):
    """``mmrag.export(...)`` calls :func:`export`: the public name and the sub-package are one object."""

    def __call__(self, run_dir: str | Path, format: str = "inspect", out: str | Path | None = None) -> list[Path]:
        return export(run_dir, format, out)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["EXPORTERS", "Written", "export", "read_manifest", "slug"]
