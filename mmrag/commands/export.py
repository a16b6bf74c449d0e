"""``mmrag export RUN_DIR --format inspect|lmms-eval [--out DIR]``: a run in another tool's format.
Parsing only; the work is in :mod:`mmrag.export`."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrag.commands._console import console


def export(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    format: str = typer.Option(
        "inspect",
        "--format",
        "-f",
        help="inspect (Inspect AI eval logs; needs the 'inspect' "
        "extra) | lmms-eval (--log_samples JSONL + results JSON)",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="folder to write (default RUN_DIR/export/FORMAT)"),
) -> None:
    """Write a run as Inspect AI eval logs (`inspect view DIR`) or lmms-eval sample logs."""
    from mmrag.export import export as run_export

    paths = run_export(run_dir, format, out)
    folder = paths[0].parent if len(paths) == 1 else Path(out) if out else run_dir / "export" / format
    console.print(f"[green]export ({format}):[/green] {folder}  ({len(paths)} files)")
    if getattr(paths, "notice", None):
        console.print(f"[yellow]{run_dir}: {paths.notice}[/yellow]")
