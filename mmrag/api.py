"""The functions behind mmrag's public names (:mod:`mmrag`): thin, documented wrappers that accept
the forms a notebook writes (paths as strings, models as ``"BACKEND:MODEL"``, configs as dicts
or YAML files) and call the library layers.  No logic of their own beyond that conversion."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # for readers and type checkers only; nothing heavy is imported at run time
    import pandas as pd

    from mmrag.labels.view import LabelledReport
    from mmrag.models.base import VLM, ModelSpec
    from mmrag.retrieval.kb import KnowledgeBase
    from mmrag.runs.config import RunConfig
    from mmrag.runs.engine import RunResult
    from mmrag.schema import Verdict


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
    from mmrag.labels.summary import with_corrected

    with trusting_code(allow_code):
        if not progress:
            result = execute(cfg, target, retry_failed=retry_failed)
        else:
            from mmrag.display import progress_bar

            with progress_bar() as bar:
                result = execute(cfg, target, progress=bar, retry_failed=retry_failed)
    result.summary = with_corrected(result.run_dir, result.summary)  # a labelled run's corrected rates
    return result


def report(
    run_dirs: str | Path | Sequence[str | Path] | pd.DataFrame,
    out: str | Path | None = None,
    *,
    write: bool = True,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    browser: bool = True,
) -> LabelledReport:
    """The report of one run (written into ``RUN_DIR/report``) or several (into ``out``): tables
    with bootstrap intervals, paired tests, figures, ``report.md`` and the HTML sample browser.

    Returns a :class:`~mmrag.labels.view.LabelledReport` (a :class:`~mmrag.reports.view.Report`
    with ``labels``): ``files`` (every file written), ``frame``, ``figure(name)`` (a matplotlib
    Figure) and ``save(fig, name, folder)``, ``table(name)``,
    ``rates(by, frame)`` and ``compare(a, b)`` with the same intervals, and ``labels`` (the human
    check of the judge).  ``write=False`` writes nothing (a notebook that only wants figures);
    a DataFrame in :func:`mmrag.load`'s format is accepted then too."""
    from mmrag.labels.report import corrected_section
    from mmrag.labels.view import LabelledReport
    from mmrag.reports import CIOptions

    opts = CIOptions(level=level, n_boot=n_boot, seed=seed)
    if not write:
        return LabelledReport(run_dirs, opts)
    import pandas

    if isinstance(run_dirs, pandas.DataFrame):
        raise TypeError("a frame has no run directory to write a report for: pass write=False")
    from mmrag.reports import report as make_report

    files = make_report(run_dirs, out, opts=opts, browser=browser, sections=(corrected_section,))
    return LabelledReport(run_dirs, opts, files=files)


@overload
def judge(target: str | Path, mode: str = "rule", model: str | ModelSpec | None = None) -> dict[str, Any]: ...


@overload
def judge(
    target: Sequence[tuple[Any, Any, Any]], mode: str = "rule", model: str | ModelSpec | None = None
) -> list[Verdict]: ...


def judge(
    target: str | Path | Sequence[tuple[Any, Any, Any]],
    mode: str = "rule",
    model: str | ModelSpec | None = None,
) -> dict[str, Any] | list[Verdict]:
    """Judge replies without calling the evaluated model.

    ``target`` a run directory: re-judge the saved run with another judge (``rule``, ``llm``,
    ``rule+llm``; the LLM modes take ``model``, e.g. ``"openai:NAME"``), as ``mmrag score RUN_DIR``
    does; the new verdicts become the run's latest, and the run's summary is returned
    (``changed_outcomes`` counts the verdicts that changed).

    ``target`` a list of ``(sample, prompt, reply)``: judge those, where a reply is a model's
    Response or the plain text of one; returns one Verdict per item (``outcome``, ``reason``,
    ``extracted``).  ``mode`` is then any registered judge (``mcq`` for multiple choice)."""
    if isinstance(target, (str, Path)):
        from mmrag.labels.summary import with_corrected
        from mmrag.runs.config import JudgeConfig
        from mmrag.runs.rescore import rescore

        spec = _spec(model) if model is not None else None
        return with_corrected(target, rescore(Path(target), JudgeConfig(mode=mode, model=spec)))  # type: ignore[arg-type]
    from mmrag.judging import judge_many, make_judge
    from mmrag.models.factory import create_model as build
    from mmrag.schema import Response

    items = [
        (sample, prompt, reply if isinstance(reply, Response) else Response(prompt_id=prompt.id, text=str(reply)))
        for sample, prompt, reply in target
    ]
    llm = build(_spec(model)) if model is not None else None
    return judge_many(make_judge(mode, llm=llm), items)


def knowledge_base(benchmark: str | Any, cache_dir: str | Path | None = None, **options: Any) -> KnowledgeBase:
    """A benchmark's knowledge base with the retrieval tools over it (see
    :class:`~mmrag.retrieval.kb.KnowledgeBase`): ``retriever(name_or_object)``, ``index(kind)``
    (the dense indices runs mine with), ``search``, ``evaluate`` (recall@k, MRR), ``miner`` and
    ``embedding`` (llama-index).  ``benchmark``: a name for :func:`load_benchmark` (with its
    ``options``) or a loaded benchmark."""
    from mmrag.retrieval.kb import KnowledgeBase

    if isinstance(benchmark, str):
        from mmrag.benchmarks import load_benchmark

        benchmark = load_benchmark(benchmark, **options)
    return KnowledgeBase(benchmark.documents(), cache_dir=cache_dir)


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
