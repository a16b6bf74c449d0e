"""mmrag: measure how vision-language models answer, deflect or hallucinate with retrieved evidence.

The public API is these names; everything else is reachable through the sub-packages but may
change between versions::

    import mmrag

    config = mmrag.RunConfig(benchmarks=[{"name": "demo"}], models=["context-reader"],
                             scenarios=[mmrag.ScenarioSpec(kind="oracle")], limit=20)
    result = mmrag.run(config, mmrag.run_dir(config, "demo"))
    df = mmrag.load(result.run_dir)              # one pandas row per sample x scenario x model
    rep = mmrag.report(result.run_dir)           # tables with intervals, figures, report.md
    fig = rep.figure("modality_matrix")          # a report figure as a matplotlib Figure
    mmrag.export(result.run_dir, "inspect")      # an Inspect AI eval log (``inspect view``)

=================  ==========================================================================
``run``            execute (or resume) a run config into a run directory
``RunConfig``      the typed run description (benchmarks x scenarios x models x judge)
``ScenarioSpec``   one scenario: kind, distractors, modalities, strictness, stress, seed
``run_dir``        a run directory named after the config's content (re-running resumes)
``load``           a run directory (or several) as a pandas DataFrame (``contexts=True``: with
                   the documents each prompt showed)
``report``         a run's report: written (tables with intervals, figures, browser) and as an
                   object whose figures, tables, rates, paired tests and human labels a notebook
                   uses piece by piece (``write=False``: nothing written)
``judge``          re-judge a saved run, or judge a list of (sample, prompt, reply), without
                   calling the model
``create_model``   a model from ``"BACKEND:MODEL"`` or a ModelSpec, behind the response cache
``load_benchmark`` a benchmark by name (``demo``, ``humblebench``, ``hf:PATH`` ...)
``knowledge_base`` a benchmark's documents with the retrieval tools over them: retrievers (yours,
                   duck-typed, or built-in), their recall and MRR, negative miners, llama-index
``export``         a run in another tool's format (Inspect AI eval log, lmms-eval samples)
``__version__``    the installed version
=================  ==========================================================================

Why ``knowledge_base`` is a name of its own: a retrieval plug-in is judged by what it finds in a
benchmark's knowledge base, so its author needs the documents, the default dense indices, the
mining filters and the retrieval metrics together.  The benchmark cannot carry them (``Benchmark``
is a protocol that plug-in benchmarks implement), and a run only exposes what it composed; one
object keeps that toolbox behind one name instead of a dozen retrieval classes at the top level.
Everything else a notebook needs hangs off the objects these names return: ``RunConfig(sweeps=
[...])`` with ``RunConfig.builtin_sweeps()``, ``ScenarioSpec.compose(sample, miner)``,
``model.generate(prompts)``, the :class:`~mmrag.reports.view.Report` methods.

Why lazy: ``import mmrag`` must not pull torch, pandas or FAISS in (a CLI's ``--help``, a worker
process, a notebook's first cell); each name imports its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names are, for editors and type checkers; nothing is imported at run time
    # (``name as name``: an explicit re-export, as the dynamic ``__all__`` below cannot say)
    from mmrag.api import create_model as create_model
    from mmrag.api import judge as judge
    from mmrag.api import knowledge_base as knowledge_base
    from mmrag.api import report as report
    from mmrag.api import run as run
    from mmrag.api import run_dir as run_dir
    from mmrag.benchmarks import load_benchmark as load_benchmark
    from mmrag.runs.config import RunConfig as RunConfig
    from mmrag.runs.frame import load as load
    from mmrag.scenarios.spec import ScenarioSpec as ScenarioSpec

#: public name -> "module:attribute" it is read from on first use
_EXPORTS = {
    "run": "mmrag.api:run",
    "RunConfig": "mmrag.runs.config:RunConfig",
    "ScenarioSpec": "mmrag.scenarios.spec:ScenarioSpec",
    "run_dir": "mmrag.api:run_dir",
    "load": "mmrag.runs.frame:load",
    "report": "mmrag.api:report",
    "judge": "mmrag.api:judge",
    "create_model": "mmrag.api:create_model",
    "load_benchmark": "mmrag.benchmarks:load_benchmark",
    "knowledge_base": "mmrag.api:knowledge_base",
    # the package itself: ``mmrag.export`` is both the sub-package and the function (a callable
    # module), so importing ``mmrag.export.inspect`` cannot replace the function with the package
    "export": "mmrag.export",
}

__all__ = [*_EXPORTS, "__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mmrag")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _EXPORTS:
        import importlib

        module, _, attr = _EXPORTS[name].partition(":")
        value = importlib.import_module(module)
        value = getattr(value, attr) if attr else value
    else:
        raise AttributeError(f"module 'mmrag' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
