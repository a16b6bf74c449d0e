"""Check the judge on a run's own replies: label a stratified sample, measure agreement, and
correct every rate for the judge's measured errors.

* :func:`load` — the run's labels (``RUN_DIR/labels/LABELLER.jsonl``) as a DataFrame;
* :func:`agreement` — kappa, agreement, coverage and confusion of the judge against the labels,
  overall and per source / scenario kind / any field, with bootstrap intervals;
* :func:`corrected_rates` — correct / deflection / hallucination rates corrected for the judge's
  confusion (matrix method), with intervals from a bootstrap over labels and run;
* :func:`draw` / :func:`ensure_sample` — the sample (stratified by source x judge outcome);
* :class:`LabelServer` / :func:`open_session` — the labelling page (``mmrag label``).

See docs/labelling.md.
"""

from __future__ import annotations

from pathlib import Path

from mmrag.labels.agree import agreement, inter_annotator
from mmrag.labels.correct import ASSUMPTION, METHOD, Confusion, correct_cell, solve
from mmrag.labels.rates import corrected_rates, labelled_pairs, run_has_labels
from mmrag.labels.sample import DEFAULT_N, LabelSample, draw, ensure_sample, read_sample
from mmrag.labels.store import HUMAN_LABELS, LabelFile, import_labels, load


def open_session(
    run_dir: str | Path,
    labeller: str,
    *,
    n: int | None = None,
    seed: int | None = None,
    show_judge: bool = False,
    undecided: bool = False,
):
    """The run's sample (drawn and stored on first use) and a labelling session on it.

    ``undecided``: every reply of the run the judge left undecided comes first (those in the
    sample in its order, then the rest in run order), then the rest of the sample; a person's label
    settles them (:mod:`mmrag.labels.settled`)."""
    from mmrag.labels.server import Session
    from mmrag.labels.settled import undecided_keys
    from mmrag.runs.frame import load as load_run
    from mmrag.runs.frame import read_records

    run_dir = Path(run_dir)
    sample = ensure_sample(run_dir, load_run(run_dir), n=n, seed=seed)
    all_records = read_records(run_dir)
    order = list(sample.keys)
    first: list[str] = []
    if undecided:
        run_order = undecided_keys(all_records)
        open_ = set(run_order)
        in_sample = [k for k in order if k in open_]
        seen = set(in_sample)
        first = in_sample + [k for k in run_order if k not in seen]
        order = first + [k for k in order if k not in open_]
    wanted = set(order)
    records = {r.key: r for r in all_records if r.key in wanted}
    return Session(
        run_dir=run_dir,
        sample=sample,
        records=records,
        labeller=labeller,
        show_judge=show_judge,
        title=f"mmrag label · {run_dir.resolve().name}",
        order=order,
        n_undecided=len(first),
    )


def __getattr__(name: str):
    if name == "LabelServer":  # starlette / uvicorn only when serving
        from mmrag.labels.server import LabelServer

        return LabelServer
    raise AttributeError(name)


__all__ = [
    "ASSUMPTION",
    "Confusion",
    "DEFAULT_N",
    "HUMAN_LABELS",
    "LabelFile",
    "LabelSample",
    "LabelServer",
    "METHOD",
    "agreement",
    "correct_cell",
    "corrected_rates",
    "draw",
    "ensure_sample",
    "import_labels",
    "inter_annotator",
    "labelled_pairs",
    "load",
    "open_session",
    "read_sample",
    "run_has_labels",
    "solve",
]
