"""The undecided share: the part of ``unparseable`` the rule judge left undecided and handed on.

A metric over verdicts, so runs (``summary.json``'s ``undecided`` per group) and labels (who
settled each reply, :mod:`mmrag.labels.settled`) share one definition; the judge's own test of an
undecided verdict is :func:`mmrag.judging.modes.undecided`.  The share is a percentage of all
responses, the denominator of every rate, so it lies *inside* the ``unparseable`` rate and is never
subtracted from another rate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: what the summary says beside the undecided column (which rates leave undecided replies out)
UNDECIDED_NOTE = (
    "*undecided % all* is the part of *unparseable* the rule judge left undecided and handed on "
    "(to the LLM judge under `--judge rule+llm`, to a person with `mmrag label RUN --undecided`); "
    "every rate here keeps it in its denominator, none excludes it; only `mmrag judge-agreement`'s "
    "kappa over decided pairs and coverage leave it out."
)


def is_undecided(verdict: Any) -> bool:
    """The judge's own test (one definition: :func:`mmrag.judging.modes.undecided`)."""
    from mmrag.judging.modes import undecided

    return undecided(verdict)


def undecided_share(verdicts: Iterable[Any]) -> float | None:
    """Percent of the given verdicts (the responses of a group, failed requests left out as for
    every rate) the judge left undecided; None when there are none."""
    flags = [is_undecided(v) for v in verdicts]
    return 100.0 * sum(flags) / len(flags) if flags else None
