"""The human check of a report's run, piece by piece from Python: ``mmrag.report(RUN_DIR).labels``.

:class:`LabelledReport` is the :class:`~mmrag.reports.view.Report` that :func:`mmrag.report`
returns, with ``labels`` added here: labels read runs and feed reports, so reports never import
them.  Nothing here modifies a run, except :class:`Labels`, which writes only ``RUN_DIR/labels``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.view import Report


class Agreement(dict):
    """The judge-agreement result (a dict, keys as :func:`mmrag.labels.agreement` documents);
    printing it gives the text ``mmrag judge-agreement`` prints."""

    def __str__(self) -> str:
        from mmrag.labels.report import format_run_agreement

        return format_run_agreement(self)


class Labels:
    """Human labels of one run: the stratified sample, the label files, agreement and corrected
    rates (docs/labelling.md).  ``classes`` are the labels a person gives."""

    def __init__(self, run_dir: Path, report: Report) -> None:
        self.run_dir = run_dir
        self._report = report

    @property
    def classes(self) -> tuple[str, ...]:
        from mmrag.labels import HUMAN_LABELS

        return tuple(HUMAN_LABELS)

    def sample(self, n: int | None = None, seed: int | None = None) -> Any:
        """The sample to label (drawn once, then read from ``RUN_DIR/labels/sample.json``): its
        ``keys`` in labelling order and its ``strata`` (replies in the run, in the sample)."""
        from mmrag.labels import ensure_sample

        return ensure_sample(self.run_dir, self._report.frame, n=n, seed=seed)

    def add(self, labeller: str, labels: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> Path:
        """Append ``key -> label`` lines to ``RUN_DIR/labels/LABELLER.jsonl``, as the labelling page
        does (later lines for a key win); returns the file."""
        from mmrag.labels import LabelFile

        out = LabelFile(self.run_dir, labeller)
        for key, label in labels.items() if isinstance(labels, Mapping) else labels:
            out.append(key, label)
        return out.path

    def frame(self) -> pd.DataFrame:
        """Every label of the run, one row per labeller x reply."""
        from mmrag.labels import load

        return load(self.run_dir)

    def agreement(self, **options: Any) -> Agreement:
        """Kappa, agreement, coverage and confusion of the judge against the labels, with
        intervals (``n_boot``, ``level``, ``seed``, ``by``, ``labeller``)."""
        from mmrag.labels import agreement

        return Agreement(agreement(self.run_dir, **self._report._ci(options)))

    def corrected_rates(self, by: Sequence[str] = ("model", "kind"), **options: Any) -> pd.DataFrame:
        """Rates corrected for the judge's measured confusion, per group of ``by`` (``()``: the
        whole run), with bootstrap intervals; ``attrs`` name the method and its assumption."""
        from mmrag.labels import corrected_rates

        return corrected_rates(self.run_dir, by=tuple(by), **self._report._ci(options))


class LabelledReport(Report):
    """A :class:`~mmrag.reports.view.Report` with the human labels of its run (``labels``)."""

    @property
    def labels(self) -> Labels:
        """The human labels of the run (one run directory only)."""
        if len(self.run_dirs) != 1:
            raise InputError("labels belong to one run directory", field="run_dir")
        return Labels(self.run_dirs[0], self)
