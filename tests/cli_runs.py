"""The ``mmrag run`` command line the integration tests type: a small demo run into ``out``.

One place for it, so a test says only what differs from the common case (the model, the
scenarios, a server URL, an extra flag) and a change to the run flags is made once."""

from __future__ import annotations

from pathlib import Path

from mmrag.cli import main


def demo_run_argv(
    out: str | Path,
    *extra: str,
    model: str = "always-deflect",
    scenarios: str = "parametric",
    limit: int = 2,
    benchmark: str = "demo",
) -> list[str]:
    """``mmrag run --benchmark demo --model M --scenarios S --limit N --out OUT EXTRA...``."""
    return [
        "run",
        "--benchmark",
        benchmark,
        "--model",
        model,
        "--scenarios",
        scenarios,
        "--limit",
        str(limit),
        "--out",
        str(out),
        *extra,
    ]


def cli_run(out: str | Path, *extra: str, **options) -> Path:
    """Run :func:`demo_run_argv` through the CLI, assert it succeeded, and return the run directory."""
    code = main(demo_run_argv(out, *extra, **options))
    assert code == 0, f"mmrag run exited {code}"
    return Path(out)
