"""Who settled each reply: the rules, the LLM judge, a person, or nobody yet.

The rule judge decides only what it can show and leaves the rest *undecided* (outcome
``unparseable`` with ``details["undecided"]``, :func:`mmrag.judging.modes.undecided`).  An
undecided reply is handed on: ``--judge rule+llm`` sends it to the LLM judge, and ``mmrag label
RUN --undecided`` puts it first on the labelling page, where a person's label settles it.  This
module counts the outcome of that hand-off, so a report can say how much of a run rests on each:

* ``rule``: a rule verdict in one of the three classes;
* ``llm``: the LLM judge's verdict (``details["judged_by"] == "llm"``, or an ``llm-*`` judge);
* ``person``: the judge left it undecided and a person labelled it (any labeller);
* ``undecided``: the judge left it undecided and nobody has labelled it yet;
* ``not_judged``: ``unparseable`` for another cause (a reply cut off, empty, a failed judge call).

Failed requests have no reply and are not counted.  The undecided share of a group is a metric
over verdicts (:func:`mmrag.metrics.undecided.undecided_share`, which ``summary.json`` shows for
every run): a percentage of all responses, *inside* the ``unparseable`` rate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from mmrag.labels.store import HUMAN_LABELS
from mmrag.metrics.undecided import is_undecided

#: who can settle a reply, in the order tables show them
SETTLERS: tuple[str, ...] = ("rule", "llm", "person", "undecided", "not_judged")
HEADERS = {"rule": "rule", "llm": "LLM", "person": "person", "undecided": "still undecided", "not_judged": "not judged"}


def judge_settler(verdict: Any) -> str:
    """Who settled a verdict before any person looked: ``rule``, ``llm``, ``undecided`` or ``not_judged``."""
    if is_undecided(verdict):
        return "undecided"
    if verdict.outcome not in HUMAN_LABELS:
        return "not_judged"
    if verdict.details.get("judged_by") == "llm" or str(verdict.judge_id).startswith("llm"):
        return "llm"
    return "rule"


def undecided_keys(records: Iterable[Any]) -> list[str]:
    """Keys of the replies the judge left undecided, in the order given (failed requests left out)."""
    return [r.key for r in records if r.response.error is None and is_undecided(r.verdict)]


def person_labelled(labels: pd.DataFrame | None) -> set[str]:
    """Keys some person gave one of the three labels (skips and retractions are not labels)."""
    if labels is None or labels.empty:
        return set()
    return set(labels.loc[labels["label"].isin(HUMAN_LABELS), "key"])


def settled_by(records: Sequence[Any], labels: pd.DataFrame | None = None) -> Counter[str]:
    """``{settler: count}`` over the records with a reply (see the module docstring)."""
    labelled = person_labelled(labels)
    out: Counter[str] = Counter({s: 0 for s in SETTLERS})
    for r in records:
        if r.response.error is not None:
            continue
        who = judge_settler(r.verdict)
        out["person" if who == "undecided" and r.key in labelled else who] += 1
    return out


def settled_groups(records: Sequence[Any], labels: pd.DataFrame | None) -> list[dict[str, Any]]:
    """:func:`settled_by` per (benchmark, scenario, model), in the summary's order, plus a total."""
    from mmrag.runs.summary import _paper_order, group_records
    from mmrag.scenarios.kinds import scenario_label

    groups = []
    for (bench, sid, model), recs in sorted(group_records(list(records)).items(), key=_paper_order):
        head = {"benchmark": bench, "scenario_id": sid, "scenario": scenario_label(recs[0].scenario), "model": model}
        groups.append(head | dict(settled_by(recs, labels)))
    total = {"benchmark": "all", "scenario_id": "", "scenario": "", "model": ""}
    return [*groups, total | dict(settled_by(records, labels))]


def settled_markdown(groups: Sequence[dict[str, Any]]) -> list[str]:
    """A markdown table of :func:`settled_groups` (empty list when there are no groups)."""
    if not groups:
        return []
    lines = [
        "| benchmark | scenario | model | " + " | ".join(HEADERS[s] for s in SETTLERS) + " |",
        "| --- | --- | --- | " + " | ".join("---:" for _ in SETTLERS) + " |",
    ]
    for g in groups:
        cells = " | ".join(str(g[s]) for s in SETTLERS)
        lines.append(f"| {g['benchmark']} | {g['scenario']} | {g['model']} | {cells} |")
    return lines
