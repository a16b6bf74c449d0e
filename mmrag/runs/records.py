"""The full record of one cell (sample x scenario x model): the row type that ``read_records``
rebuilds from a run's ``records/`` and ``objects/`` tables (old ``samples.jsonl`` runs stored one
per line).

A record carries the whole sample and prompt so that a saved run can be re-judged (``mmrag score``),
browsed (the HTML browser) and loaded into pandas without the original dataset at hand.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mmrag.schema import Prompt, Response, Sample, Verdict, stable_id


def record_key(sample_id: str, scenario_id: str, model_fingerprint: str) -> str:
    """The identity of a cell of a run; resume skips keys already on disk."""
    return stable_id(sample_id, scenario_id, model_fingerprint, length=24)


def judge_error(verdict: Verdict) -> str | None:
    """The error class of a verdict whose judge call failed (see :func:`mmrag.judging.llm.judge_failure`)."""
    from mmrag.judging.llm import judge_failure

    return judge_failure(verdict)


def cell_error(response: Response, verdict: Verdict) -> str | None:
    """Why a cell was not measured: the request's error class, ``judge_<class>`` when the reply
    came back but the judge call failed, else None.  Either kind is a failed cell (error budget,
    ``--resume``), never an outcome."""
    if response.error is not None:
        return response.error
    je = judge_error(verdict)
    return f"judge_{je}" if je else None


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    benchmark: str
    benchmark_kind: str
    scenario_id: str
    scenario: dict[str, Any]
    model: str
    model_fingerprint: str
    sample: Sample
    prompt: Prompt
    response: Response
    verdict: Verdict
    mining: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return self.verdict.outcome

    @property
    def error(self) -> str | None:
        """See :func:`cell_error`."""
        return cell_error(self.response, self.verdict)
