"""The ``mmrag`` command.  Thin on purpose: each sub-command lives in :mod:`mmrag.commands` and
only parses flags and calls the library.  Every deliberate error (:class:`MmragError`) becomes one
line on stderr and a non-zero exit; nothing else is caught, so real bugs keep their traceback.

``mmrag NAME ...`` imports only the module of the command it runs (the report, label and export
commands bring pandas and matplotlib, which a run never needs); ``mmrag --help``, an unknown
name and ``mmrag.cli.app`` mount every command."""

from __future__ import annotations

import importlib
import sys

import typer

from mmrag.errors import MmragError

HELP = "mmrag: measure how VLMs answer, deflect or hallucinate with retrieved evidence."

#: (module, attribute, command name) — plain commands
COMMANDS = [
    ("mmrag.commands.run", "demo", "demo"),
    ("mmrag.commands.run", "run", "run"),
    ("mmrag.commands.run", "sweep", "sweep"),
    ("mmrag.commands.score", "score", "score"),
    ("mmrag.commands.judge", "judge_command", "judge"),
    ("mmrag.commands.judge", "judge_agreement_command", "judge-agreement"),
    ("mmrag.commands.report", "report", "report"),
    ("mmrag.commands.report", "browse", "browse"),
    ("mmrag.commands.curate", "curate", "curate"),
    ("mmrag.commands.label", "label", "label"),
    ("mmrag.commands.reproduce", "reproduce", "reproduce"),
    ("mmrag.commands.export", "export", "export"),
]
#: (module, attribute, group name) — typer sub-applications
GROUPS: list[tuple[str, str, str]] = [
    ("mmrag.commands.index", "app", "index"),
    ("mmrag.commands.benchmark", "app", "benchmark"),
]


def build_app(only: str | None = None) -> typer.Typer:
    """The command-line app with every command, or only the command named ``only``."""
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=HELP)
    if only is not None:

        @app.callback()
        def _group() -> None:
            """Keeps ``mmrag NAME`` a group of one command (typer runs a lone command as the app)."""

    for mod, attr, name in COMMANDS:
        if only in (None, name):
            app.command(name)(getattr(importlib.import_module(mod), attr))
    for mod, attr, name in GROUPS:
        if only in (None, name):
            app.add_typer(getattr(importlib.import_module(mod), attr), name=name)
    return app


_APP: list[typer.Typer] = []


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # every command mounted, built once (tests and tools invoke it directly)
        if not _APP:
            _APP.append(build_app())
        return _APP[0]
    raise AttributeError(f"module 'mmrag.cli' has no attribute {name!r}")


def _command_app(argv: list[str]) -> typer.Typer:
    """The app for this command line: only the named command when the first argument names one."""
    first = argv[0] if argv else None
    names = {name for _, _, name in COMMANDS} | {name for _, _, name in GROUPS}
    return build_app(first) if first in names else __getattr__("app")


def _quiet_libraries() -> None:
    """transformers 5 draws a 'Loading weights' bar for every model load (MiniLM included): noise
    between our own progress bars."""
    import os

    # read by huggingface_hub, whose switch transformers follows; set before either is imported
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main(argv: list[str] | None = None) -> int:
    _quiet_libraries()
    try:
        # with standalone_mode=False click *returns* the code of a typer.Exit instead of raising it
        args = list(sys.argv[1:] if argv is None else argv)
        rc = _command_app(args)(args=args, standalone_mode=False)
    except MmragError as exc:
        print(f"mmrag: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        # a full disk (or quota) anywhere: one clear line naming the path, never a traceback
        # (writers are atomic or append-only, so what was written before stays intact)
        from mmrag.util import as_input_error

        err = as_input_error(exc)
        if err is exc:
            raise
        print(f"mmrag: error: {err}", file=sys.stderr)
        return err.exit_code  # type: ignore[union-attr]  # as_input_error gave an InputError (err is not exc)
    except typer.Abort:
        print("mmrag: aborted", file=sys.stderr)
        return 130
    except Exception as exc:
        # usage errors (unknown option, bad value): typer raises its own vendored click classes,
        # which are not subclasses of the installed click's, so recognise them by behaviour
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return code
        if type(exc).__name__ == "Exit" and isinstance(code, int):
            return code
        raise
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
