"""Whether a run finished: the one reading of the manifest's state that every reader shares.

A run killed by SIGKILL, stopped by an error, or still being written leaves a run directory that
reads like a finished one: its records are valid, only fewer.  A report, summary, browser or export
that does not say so presents a missing scenario as if it had never been asked for.  The engine
records the plan's size in the manifest when it starts (``counts.planned`` and ``planned``: cells per
benchmark x scenario x model) and the final ``status`` when it ends; :func:`run_state` compares that
with the cells stored, and :meth:`RunState.notice` is the sentence every reader prints:
``incomplete: X of Y cells``.

``status`` ``running`` with no live writer means the process died (killed, out of memory, machine
lost); with a live writer (the pid in ``RUN/lock`` exists) the run is still going.  A manifest with
no status (an old run, a hand-made fixture) is taken as finished: there is nothing to say.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrag.util import pid_alive

#: manifest statuses of a run whose plan was worked through to the end
FINISHED = frozenset({"complete", "complete_with_failures"})

Group = tuple[str, str, str]  # (benchmark, scenario id, model)


def planned_entry(benchmark: str, scenario_id: str, model: str, cells: int, scenario: str = "") -> dict[str, Any]:
    """One ``manifest.planned`` item (JSON has no tuple keys); ``scenario`` is its human label, so
    a scenario with no stored cell yet can still be named."""
    return {"benchmark": benchmark, "scenario_id": scenario_id, "scenario": scenario, "model": model, "cells": cells}


def _writer_alive(run_dir: Path) -> bool:
    """Whether the process named in ``RUN/lock`` still exists (the lock file keeps its pid line
    after release; a pid that is gone means nobody writes the run).  Read-only: taking the lock to
    test it could make a starting run refuse its own directory."""
    try:
        text = (run_dir / "lock").read_text(encoding="utf-8", errors="replace").split()
        pid = int(text[1]) if len(text) >= 2 and text[0] == "pid" else 0
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    if pid == os.getpid():  # this process reads (e.g. ``mmrag score`` holding the lock): no other writer
        return False
    if not pid_alive(pid):
        return False
    try:  # a zombie (killed, not yet reaped by its parent) writes nothing any more
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class RunState:
    """A run's completeness as a reader sees it."""

    run: str
    status: str  # the manifest's status ("" when it records none)
    live: bool  # a process is writing the run now
    planned: int | None  # cells the plan holds (None: not recorded)
    done: int  # cells answered (a stored reply)
    failed: int  # cells whose last request failed (to be retried by ``--resume``)
    planned_by: dict[Group, int] = field(default_factory=dict)
    done_by: dict[Group, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # scenario id -> label, from the plan

    @property
    def complete(self) -> bool:
        return self.status in FINISHED or not self.status

    @property
    def why(self) -> str:
        """Why the run is not complete, in a few words."""
        if self.live:
            return "the run is still being written"
        if self.status == "failed":
            return "an error stopped the run"
        return "the run was stopped before it finished (killed?)"

    def notice(self) -> str | None:
        """``incomplete: X of Y cells (why; how to finish)`` — None for a finished run."""
        if self.complete:
            return None
        of = f" of {self.planned}" if self.planned is not None else ""
        failed = f", {self.failed} failed" if self.failed else ""
        how = "" if self.live else f"; `mmrag run --resume {self.run}` completes it"
        return f"incomplete: {self.done}{of} cells{failed} ({self.why}{how})"

    def missing(self) -> list[tuple[Group, int, int]]:
        """(group, answered, planned) of every benchmark x scenario x model with cells still to do."""
        return [
            (g, self.done_by.get(g, 0), n) for g, n in sorted(self.planned_by.items()) if self.done_by.get(g, 0) < n
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "complete": self.complete,
            "live": self.live,
            "planned": self.planned,
            "done": self.done,
            "failed": self.failed,
            "notice": self.notice(),
        }


def read_manifest_quietly(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_state(
    run_dir: str | Path,
    cells: Iterable[tuple[str, str, str, bool]],
    manifest: dict[str, Any] | None = None,
    status: str | None = None,
) -> RunState:
    """The state of ``run_dir`` given its stored ``cells`` as (benchmark, scenario id, model, failed).

    ``status`` overrides the manifest's (the engine knows the final status before it writes it)."""
    run_dir = Path(run_dir)
    man = read_manifest_quietly(run_dir) if manifest is None else manifest
    done_by: Counter[Group] = Counter()
    failed = 0
    for bench, sid, model, bad in cells:
        if bad:
            failed += 1
        else:
            done_by[(bench, sid, model)] += 1
    planned_by: dict[Group, int] = {}
    labels: dict[str, str] = {}
    for item in man.get("planned") or []:
        if isinstance(item, dict):
            g = (str(item.get("benchmark")), str(item.get("scenario_id")), str(item.get("model")))
            planned_by[g] = planned_by.get(g, 0) + int(item.get("cells") or 0)
            if item.get("scenario"):
                labels[g[1]] = str(item["scenario"])
    counts: dict[str, Any] = c if isinstance(c := man.get("counts"), dict) else {}
    planned = counts.get("planned") if isinstance(counts.get("planned"), int) else None
    if planned is None and planned_by:
        planned = sum(planned_by.values())
    st = str(man.get("status") or "") if status is None else status
    return RunState(
        run=str(run_dir),
        status=st,
        live=st == "running" and status is None and _writer_alive(run_dir),
        planned=planned,
        done=sum(done_by.values()),
        failed=failed,
        planned_by=planned_by,
        done_by=dict(done_by),
        labels=labels,
    )


def nothing_to_do(run_dir: str | Path) -> str | None:
    """For ``mmrag run --resume`` of a run that finished: the sentence saying so, read from the
    manifest alone (no benchmark, index, model or record is loaded, so it answers in about a
    second).  None when anything could be left: a status other than ``complete``, failed cells or
    judge calls, no recorded plan, a run written by another mmrag version or revision (whose
    plan may differ from this one's), records, verdicts or labels changed since its summary, or a
    config naming code by dotted path or missing a redacted secret (both refused on the full path)
    -- then the engine checks every cell as before."""
    from mmrag.redact import find_redacted
    from mmrag.runs.manifest import git_revision, package_versions
    from mmrag.runs.summary import results_state

    run_dir = Path(run_dir)
    man = read_manifest_quietly(run_dir)
    counts: dict[str, Any] = c if isinstance(c := man.get("counts"), dict) else {}
    planned = counts.get("planned")
    if man.get("status") != "complete" or not isinstance(planned, int) or planned <= 0:
        return None
    if counts.get("records") != planned or counts.get("failed") or counts.get("judge_failed"):
        return None
    if man.get("mmrag_version") != package_versions().get("mmrag", "0") or man.get("git_revision") != git_revision():
        return None
    if man.get("summary_state") and man["summary_state"] != results_state(
        run_dir, str(man.get("mmrag_version") or ""), man.get("git_revision")
    ):
        return None  # its records, verdicts or labels changed since it was summarised: summarised again
    if _names_code(man.get("config")) or find_redacted(man.get("config")):
        return None  # the full path refuses these: code a manifest names, a secret it lost
    return (
        f"nothing to do: {run_dir} is complete ({planned} of {planned} cells, "
        f"finished {man.get('updated_at') or '?'}); its summary is {run_dir / 'summary.md'}"
    )


def _names_code(value: Any) -> bool:
    """Whether a manifest's config holds a string in the dotted form a registry would import
    (``pkg.module:Attr``; URLs aside).  Conservative: a model id with a colon takes the full path
    too, which only costs the seconds the fast path saves."""
    if isinstance(value, dict):
        return any(_names_code(v) for v in value.values())
    if isinstance(value, list):
        return any(_names_code(v) for v in value)
    return isinstance(value, str) and ":" in value and "://" not in value


def records_state(run_dir: str | Path, records: Iterable[Any], **kwargs: Any) -> RunState:
    """:func:`run_state` from :class:`~mmrag.runs.records.RunRecord` objects."""
    return run_state(
        run_dir, ((r.benchmark, r.scenario_id, r.model, r.response.error is not None) for r in records), **kwargs
    )


def frame_state(run_dir: str | Path, frame: Any) -> RunState:
    """:func:`run_state` from the rows of :func:`mmrag.load` that belong to ``run_dir``."""
    cols = ["benchmark", "scenario_id", "model", "error"]
    rows = frame[cols].itertuples(index=False, name=None) if len(frame) else []
    return run_state(run_dir, ((b, s, m, isinstance(e, str) and bool(e)) for b, s, m, e in rows))


__all__ = ["FINISHED", "RunState", "frame_state", "nothing_to_do", "planned_entry", "records_state", "run_state"]
