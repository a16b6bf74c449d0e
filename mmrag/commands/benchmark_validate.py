"""``mmrag benchmark validate FILE --benchmark NAME``: print every problem of a benchmark file.

Thin: parses arguments, calls :func:`mmrag.benchmarks.validate.validate_file`, prints one line per
problem (``file:line: field 'x': message``) and exits 1 when there are problems (2 for bad input
such as an unknown benchmark name), 0 when the file is valid.  Mount with ``register(app)`` on the
``benchmark`` sub-application, or use ``app`` on its own.
"""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Benchmark data tools.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Benchmark data tools (keeps ``validate`` a sub-command even when it is the only one)."""


def validate(
    file: Path = typer.Argument(..., help="the file to check (for humblebench: metadata.jsonl or its folder)"),
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="format: deflection | kb | knowhal | humblebench"),
) -> None:
    """Check FILE against the schema of --benchmark and list every problem with line and field."""
    from mmrag.benchmarks.validate import validate_file
    from mmrag.errors import InputError

    try:
        problems = validate_file(file, benchmark)
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    for p in problems:
        typer.echo(p.render(file))
    if problems:
        typer.echo(f"{len(problems)} problem(s) in {file}", err=True)
        raise typer.Exit(1)
    typer.echo(f"{file}: valid {benchmark} file, {problems.records} record(s)")


def register(target: typer.Typer) -> None:
    """Add the ``validate`` command to ``target`` (the CLI's ``benchmark`` group)."""
    target.command("validate")(validate)


register(app)
