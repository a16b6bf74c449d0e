"""``Report``: what ``mmrag report`` writes, available piece by piece from Python (``mmrag.report``).

A notebook wants the report's figures as matplotlib objects it can show and restyle, its tables
as DataFrames and a rate with the report's clustered interval for any slice it cuts itself,
without importing the layers that compute them.  A Report holds the run frame (loaded once) and
the interval options; every method computes on demand and nothing here modifies a run.  The
judge check of :mod:`mmrag.labels` (``report.labels``) is added by
:class:`mmrag.labels.view.LabelledReport`, which :func:`mmrag.report` returns: labels build on
reports, never the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.tables import CIOptions
from mmrag.schema import OUTCOMES


class Report:
    """The analysis of one or several runs, or of a frame in :func:`mmrag.load`'s format.

    ``files``: what :func:`mmrag.report` wrote (empty with ``write=False``).  Figures and tables
    are the ones ``mmrag report`` makes (``figure_names`` / ``table_names`` list those that apply)."""

    def __init__(
        self,
        source: str | Path | Sequence[str | Path] | pd.DataFrame,
        opts: CIOptions = CIOptions(),
        files: Sequence[Path] = (),
    ) -> None:
        if isinstance(source, pd.DataFrame):
            self.run_dirs: list[Path] = []
            self._frame: pd.DataFrame | None = source
        else:
            self.run_dirs = [Path(source)] if isinstance(source, (str, Path)) else [Path(d) for d in source]
            if not self.run_dirs:
                raise InputError("give at least one run directory")
            self._frame = None
        self.opts = opts
        self.files = list(files)

    def __repr__(self) -> str:
        where = ", ".join(str(d) for d in self.run_dirs) or "a frame"
        return f"Report({where}, {len(self.files)} files written)"

    def _ci(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"level": self.opts.level, "n_boot": self.opts.n_boot, "seed": self.opts.seed, **options}

    @property
    def frame(self) -> pd.DataFrame:
        """The runs' rows (:func:`mmrag.load`; a model seen in several runs becomes ``model (run)``)."""
        if self._frame is None:
            from mmrag.reports.report import disambiguate_models
            from mmrag.runs.frame import load

            self._frame = disambiguate_models(load(self.run_dirs))
        return self._frame

    # -- figures ------------------------------------------------------------------------------

    @property
    def figure_names(self) -> list[str]:
        from mmrag.reports.plots import PLOTS

        return [name for name, spec in PLOTS.items() if spec.applies(self.frame)]

    def figure(self, name: str, frame: pd.DataFrame | None = None) -> Any:
        """A report figure (``modality_matrix``, ``distractor_curve``, ``strictness``,
        ``humblebench_stress``, ``knowhal``) as a matplotlib Figure; its ``.data`` holds the
        numbers drawn.  ``frame``: draw from these rows instead of the whole report."""
        from mmrag.reports.plots import PLOTS

        if name not in PLOTS:
            raise InputError(f"no figure {name!r}; one of {', '.join(PLOTS)}", field="name")
        return PLOTS[name].draw(self.frame if frame is None else frame, self.opts)

    def save(self, fig: Any, name: str, folder: str | Path | None = None) -> list[Path]:
        """``NAME.png`` and ``NAME.svg`` in the report's style, written atomically into ``folder``
        (default: the report's ``figures`` folder, ``RUN_DIR/report/figures`` for one run)."""
        from mmrag.reports.plotkit import save_figure

        if folder is None:
            if len(self.run_dirs) != 1:
                raise InputError("say which folder the figure goes to", field="folder")
            folder = self.run_dirs[0] / "report" / "figures"
        return save_figure(fig, folder, name)

    # -- tables -------------------------------------------------------------------------------

    @property
    def table_names(self) -> list[str]:
        from mmrag.reports.plots import PLOTS
        from mmrag.reports.tables import TABLES

        df = self.frame
        names = [name for name, spec in TABLES.items() if spec.applies(df)]
        family = [n for n in ("humblebench_stress", "knowhal") if PLOTS[n].applies(df)]
        return [*names, *family, "paired_models", "paired_scenarios"]

    def table(self, name: str) -> pd.DataFrame:
        """A report table by name: the rate tables (``scenario``, ``modality`` ...), the
        benchmark-family panels ``humblebench_stress`` and ``knowhal``, and the paired
        differences ``paired_models`` and ``paired_scenarios``."""
        from mmrag.reports import humblebench_panel, knowhal_table, model_differences, scenario_differences
        from mmrag.reports.tables import TABLES

        df, opts = self.frame, self.opts
        family = {
            "humblebench_stress": lambda: humblebench_panel(df, opts),
            "knowhal": lambda: knowhal_table(df, opts),
            "paired_models": lambda: model_differences(df, opts=opts),
            "paired_scenarios": lambda: scenario_differences(df, opts=opts),
        }
        if name in family:
            return family[name]()
        if name in TABLES:
            return TABLES[name].build(df, opts)
        raise InputError(f"no table {name!r}; one of {', '.join([*TABLES, *family])}", field="name")

    def rates(
        self, by: Sequence[str] = (), frame: pd.DataFrame | None = None, outcomes: Sequence[str] = OUTCOMES
    ) -> pd.DataFrame:
        """Outcome rates in percent (every rate and difference the facade returns is in percent;
        :func:`mmrag.load`'s outcome columns are per-row booleans) per group of ``by``, each with the report's bootstrap interval
        clustered by question (``OUTCOME``, ``OUTCOME_lo``, ``OUTCOME_hi``, plus ``n``,
        ``n_questions``, ``coverage``).  ``frame``: any slice of the rows (it needs
        ``question_id`` and the boolean outcome columns)."""
        from mmrag.reports.tables import rate_table

        df = self.frame if frame is None else frame
        if not by:
            df = df.assign(_all="all")
            return rate_table(df, ["_all"], outcomes=tuple(outcomes), opts=self.opts).drop(columns="_all")
        return rate_table(df, list(by), outcomes=tuple(outcomes), opts=self.opts)

    def compare(
        self,
        a: pd.DataFrame | None = None,
        b: pd.DataFrame | None = None,
        on: str = "sample_id",
        *,
        baseline: pd.DataFrame | None = None,
        treatment: pd.DataFrame | None = None,
    ) -> dict[str, Any]:
        """Two slices paired on ``on``: per outcome the rates (``OUTCOME_a``: baseline,
        ``OUTCOME_b``: treatment, in percent) and ``d_OUTCOME`` = treatment - baseline in percentage
        points with a paired clustered bootstrap interval, ``p_boot`` (correctness), McNemar's exact
        ``p_mcnemar`` and ``n_pairs``; failed requests are left out of the pairing.

        Name the slices (``compare(baseline=at0, treatment=at8)``) so the sign cannot be read
        backwards; positionally, ``compare(a, b)`` is ``b - a``."""
        from mmrag.reports.paired import compare

        if (baseline is None) != (treatment is None):
            raise InputError("give both baseline= and treatment=", field="baseline")
        if baseline is not None:
            if a is not None or b is not None:
                raise InputError("give the slices either as (a, b) or as baseline=/treatment=, not both", field="a")
            a, b = baseline, treatment
        if a is None or b is None:
            raise InputError("give two slices: compare(baseline=..., treatment=...)", field="baseline")
        out = compare(a, b, on=on, opts=self.opts)
        out["difference"] = "treatment - baseline (b - a), percentage points"
        return out
