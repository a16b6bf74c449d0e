"""The one owner of replies no judge reads: failed requests, cut-off or withheld replies, empty ones.

The run engine (:func:`mmrag.runs.pipeline.engine_verdict`) and every judge call :func:`unjudged`
first, so a reply cut off at the token limit (``finish_reason`` ``length``) or withheld
(``content_filter``) gets the same verdict whether a run or ``mmrag judge --input`` meets it, and a
failed request has one verdict format.  None of these is *undecided*: no reader could judge them,
so ``rule+llm`` never sends them on.
"""

from __future__ import annotations

from mmrag.schema import Response, Verdict


def unjudged(response: Response, judge_id: str) -> Verdict | None:
    """The verdict of a reply that must not be judged, or None (judge it)."""
    if response.error is not None:
        return Verdict(
            outcome="unparseable",
            judge_id=judge_id,
            reason=f"request failed: {response.error}",
            details={"error": response.error, "error_detail": response.error_detail, "decided": True},
        )
    if response.incomplete:
        return Verdict(
            outcome="unparseable",
            judge_id=judge_id,
            reason=f"reply incomplete (finish_reason={response.finish_reason}); not scored",
            details={"finish_reason": response.finish_reason, "decided": True},
        )
    if not (response.text or "").strip():
        return Verdict(outcome="unparseable", judge_id=judge_id, reason="empty response", details={"decided": True})
    return None
