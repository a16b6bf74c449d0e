"""``mmrag label RUN_DIR``: the labelling page, or ``--export`` / ``--import`` of the sample's
labels.  Parsing only; the work is in :mod:`mmrag.labels`."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrag.commands._console import console


def label(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    labeller: str | None = typer.Option(
        None, "--labeller", help="your name; labels go to RUN_DIR/labels/NAME.jsonl (default: the login name)"
    ),
    n: int | None = typer.Option(
        None,
        "--n",
        min=1,
        help="sample size, stratified by source x judge outcome (default 200; fixed once the sample is drawn)",
    ),
    seed: int | None = typer.Option(None, "--seed", help="seed of the sample (default 0)"),
    show_judge: bool = typer.Option(False, "--show-judge", help="show the judge's verdict on the page"),
    undecided: bool = typer.Option(
        False,
        "--undecided",
        help="first every reply the judge left undecided (in the sample or not), then the sample: "
        "your label settles them",
    ),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="port on 127.0.0.1 (default: a free one)"),
    export: Path | None = typer.Option(None, "--export", help="write the sample (no verdicts) as JSONL and exit"),
    import_: Path | None = typer.Option(
        None, "--import", help='add labels from a JSONL of {"key", "label", "labeller", "at"} lines and exit'
    ),
) -> None:
    """Label a stratified sample of the run's replies in the browser (keys c/d/h, s skip, u undo, ←/→)."""
    from mmrag.errors import InputError
    from mmrag.labels import import_labels, open_session
    from mmrag.labels.store import check_labeller, default_labeller

    if export is not None and import_ is not None:
        raise InputError("give --export or --import, not both", field="--import")
    if import_ is not None:
        from mmrag.runs.frame import load as load_run

        keys = set(load_run(run_dir)["key"])
        counts = import_labels(run_dir, import_, keys, labeller=check_labeller(labeller) if labeller else None)
        _refresh_summary(run_dir)
        console.print("[green]imported:[/green] " + ", ".join(f"{k}: {v} lines" for k, v in sorted(counts.items())))
        return
    who = check_labeller(labeller) if labeller else default_labeller()
    session = open_session(run_dir, who, n=n, seed=seed, show_judge=show_judge, undecided=undecided)
    if export is not None:
        from mmrag.labels.items import export_sample
        from mmrag.labels.store import labels_dir

        if export.resolve().parent == labels_dir(run_dir).resolve():
            raise InputError(
                "write the export outside RUN_DIR/labels/ (its .jsonl files are label files)", field="--export"
            )

        count = export_sample(export, [session.records[k] for k in session.keys])
        console.print(f"[green]exported:[/green] {export} ({count} items, no verdicts)")
        return
    from mmrag.labels.server import LabelServer

    server = LabelServer(session, port=port)
    done = len([v for v in session.file.current().values() if v != "skip"])
    first = f", the {session.n_undecided} the judge left undecided first" if undecided else ""
    console.print(
        f"labelling {len(session.keys)} replies of {run_dir} as [bold]{who}[/bold]{first} "
        f"({done} labelled so far); labels go to {session.file.path}"
    )
    console.print(f"open [bold]{server.url}[/bold]   (Ctrl-C to stop)")
    try:
        server.serve()
    finally:
        _refresh_summary(run_dir)


def _refresh_summary(run_dir: Path) -> None:
    """Put the corrected rates into summary.json / summary.md when the run has them."""
    from mmrag.labels.summary import refresh_summary

    refresh_summary(run_dir)
