"""The functions behind mmrag's public names (:mod:`mmrag`): thin, documented wrappers that accept
the forms a notebook writes (paths as strings, models as ``"BACKEND:MODEL"``, configs as dicts
or YAML files) and call the library layers.  No logic of their own beyond that conversion."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for readers and type checkers only; nothing heavy is imported at run time
    from mmrag.models.base import VLM, ModelSpec
    from mmrag.runs.config import RunConfig
    from mmrag.runs.engine import RunResult


def _config(config: RunConfig | dict | str | Path | None, fields: dict[str, Any]) -> RunConfig:
    from mmrag.runs.config import RunConfig, load_run_config

    if config is None:
        return RunConfig.model_validate(fields)
    if fields:
        raise TypeError("give a config or its fields as keywords, not both")
    if isinstance(config, RunConfig):
        return config
    if isinstance(config, dict):
        return RunConfig.model_validate(config)
    return load_run_config(config)


def run_dir(config: RunConfig | dict, name: str = "run", root: str | Path | None = None) -> Path:
    """``MMRAG_HOME/runs/NAME-HASH``: a run directory named after the config's content (ten hex
    digits of its hash), so running the same config again resumes, finding finished cells done,
    and a changed config gets a directory of its own.  ``root`` replaces ``MMRAG_HOME/runs``."""
    from mmrag.schema import stable_id
    from mmrag.util import mmrag_home

    cfg = _config(config, {})
    base = Path(root) if root is not None else mmrag_home() / "runs"
    return base / f"{name}-{stable_id(cfg.model_dump(mode='json'), length=10)}"


def run(
    config: RunConfig | dict | str | Path | None = None,
    out: str | Path | None = None,
    *,
    progress: bool = False,
    retry_failed: bool = False,
    allow_code: bool = False,
    **fields: Any,
) -> RunResult:
    """Execute (or resume) a run, as ``mmrag run`` does, and return its :class:`RunResult`
    (``run_dir``, ``summary``, ``new_records``, ``model_calls``, ``failure`` ...).

    ``config``: a RunConfig, a dict of its fields, a ``run.yaml`` path, or None with the fields as
    keywords (``mmrag.run(benchmarks=[{"name": "demo"}], models=["context-reader"], limit=10)``).
    ``out``: the run directory (default: the config's ``out``, else :func:`run_dir`).
    ``progress``: draw the console progress bar.  ``allow_code``: import plug-ins the config
    names by dotted path (trusted configs only, like ``--allow-code``).  A run over its error
    budget is returned with ``failure`` set; bad input raises :class:`mmrag.errors.InputError`."""
    from mmrag.registry import allow_code as trusting_code
    from mmrag.runs.engine import execute

    cfg = _config(config, fields)
    target = Path(out) if out is not None else (Path(cfg.out) if cfg.out else run_dir(cfg))
    with trusting_code(allow_code):
        if not progress:
            return execute(cfg, target, retry_failed=retry_failed)
        from mmrag.commands._console import progress_bar

        with progress_bar() as bar:
            return execute(cfg, target, progress=bar, retry_failed=retry_failed)


def report(
    run_dirs: str | Path | Sequence[str | Path],
    out: str | Path | None = None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    browser: bool = True,
) -> list[Path]:
    """Write the report of one run (into ``RUN_DIR/report``) or several (into ``out``): tables with
    bootstrap intervals, paired tests, figures, ``report.md`` and the HTML sample browser.
    Returns every file written."""
    from mmrag.reports import CIOptions
    from mmrag.reports import report as make_report

    return make_report(run_dirs, out, opts=CIOptions(level=level, n_boot=n_boot, seed=seed), browser=browser)


def judge(run_dir: str | Path, mode: str = "rule", model: str | ModelSpec | None = None) -> dict[str, Any]:
    """Re-judge a saved run with another judge (``rule``, ``llm``, ``rule+llm``; the LLM modes take
    ``model``, e.g. ``"openai:NAME"``) without calling the evaluated model again, as
    ``mmrag score RUN_DIR`` does.  The new verdicts become the run's latest; returns its summary
    (``changed_outcomes`` counts the verdicts that changed)."""
    from mmrag.runs.config import JudgeConfig
    from mmrag.runs.rescore import rescore

    spec = _spec(model) if model is not None else None
    return rescore(Path(run_dir), JudgeConfig(mode=mode, model=spec))  # type: ignore[arg-type]


def _spec(model: str | ModelSpec | dict) -> ModelSpec:
    from mmrag.models.base import ModelSpec

    return model if isinstance(model, ModelSpec) else ModelSpec.model_validate(model)


def create_model(model: str | ModelSpec | dict, cache: Any = "default") -> VLM:
    """A model from ``"BACKEND:MODEL"`` (``"context-reader"``, ``"sim-vlm:text_prior=0.9"``,
    ``"openai:NAME"`` with ``OPENAI_BASE_URL``), a dict or a :class:`ModelSpec`, behind the shared
    response cache (``cache=None``: none; a path: that cache file).  ``model.generate(prompts,
    settings)`` answers a list of :class:`mmrag.schema.Prompt`."""
    from mmrag.models.factory import create_model as build

    return build(_spec(model), cache=cache)
