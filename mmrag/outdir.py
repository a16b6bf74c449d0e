"""Output folders a command makes and may later write again (``report --out``, ``export --out``).

Why: ``mmrag report --out ~/notes`` used to write ``report.md``, ``tables/`` and ``figures/`` into
whatever folder it was given, overwriting a user's own ``report.md``.  ``run`` and ``sweep``
already refuse a non-empty folder that holds no run; these commands follow the same rule with a
marker file instead of a manifest: :func:`claim` accepts a folder that does not exist, an empty
one, or one it marked before (an earlier report or export of the same kind, written again), and
refuses any other with one error naming a few of the files it holds.
"""

from __future__ import annotations

from pathlib import Path

from mmrag.errors import InputError

#: the marker's name for each kind of output (a hidden file, so listings and globs skip it)
MARKER = ".mmrag-{what}"


def marker(folder: Path, what: str) -> Path:
    return folder / MARKER.format(what=what)


def foreign_entries(folder: Path, ignore: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Names in ``folder`` that are not in ``ignore`` (and not half-written ``.*.tmp`` files)."""
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name not in ignore and not (p.name.startswith(".") and p.name.endswith(".tmp"))
    )


def shown(names: list[str], k: int = 3) -> str:
    """``a, b, c and 4 more``: a few names for a one-line error."""
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")


def claim(folder: str | Path, what: str, field: str = "--out", *, check: bool = True) -> Path:
    """Make ``folder`` (parents too) and mark it as ``what``'s, unless it already holds files that
    ``what`` did not write: then one :class:`InputError` and nothing is written.  ``check=False``
    for a default folder inside a run directory (the run's own; reports written there before
    markers existed are written again)."""
    folder = Path(folder)
    mark = marker(folder, what)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"exists and is not a folder; give {field} a new or empty folder", path=folder, field=field)
    if check and folder.is_dir() and not mark.exists():
        foreign = foreign_entries(folder)
        if foreign:
            raise InputError(
                f"this folder is not empty and holds no mmrag {what} ({shown(foreign)}); "
                f"give {field} a new or empty folder",
                path=folder,
                field=field,
            )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError as exc:
        raise InputError(f"cannot create the {what} folder ({exc.strerror})", path=folder, field=field) from None
    return folder
