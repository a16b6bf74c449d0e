"""The row type of a run's ``samples.jsonl``: one line per sample x scenario x model.

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
