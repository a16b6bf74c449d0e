"""ScenarioSpec: every experimental knob of a prompt is a field here.

VLM-DeflectionBench's four retrieval scenarios, the distractor count / modality / strictness
ablations, HumbleBench's stress settings and KnowHal's no-context setting are all values of one
spec, so a sweep is just a grid over its fields and a scenario id is a hash of it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mmrag.schema import stable_id

ScenarioKind = Literal["parametric", "oracle", "realistic", "adversarial", "humblebench", "knowhal"]
ModalityChoice = Literal["text", "image", "multimodal", "any"]
Strictness = Literal["none", "soft", "moderate", "severe"]
HumbleStress = Literal["noise_image", "nota_only", "shuffle_options", "cautious_prompt", "forced_grounding_prompt"]


class ScenarioSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ScenarioKind = "oracle"
    n_distractors: int = Field(default=2, ge=0, le=64)
    positive_modality: ModalityChoice = "any"
    negative_modality: ModalityChoice = "text"
    strictness: Strictness = "none"
    #: "random" | "first" | "last" | an integer index among the contexts
    gold_position: Literal["random", "first", "last"] | int = "random"
    seed: int = 0
    max_context_tokens: int | None = None
    max_images: int | None = None
    #: HumbleBench stress transforms, applied in the official order; empty = the common setting
    stress: tuple[HumbleStress, ...] = ()
    shuffle_seed: int = 42
    template: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "ScenarioSpec":
        if "noise_image" in self.stress and "nota_only" in self.stress:
            raise ValueError("stress: noise_image cannot be combined with nota_only (as in the official code)")
        if "cautious_prompt" in self.stress and "forced_grounding_prompt" in self.stress:
            raise ValueError("stress: cautious_prompt cannot be combined with forced_grounding_prompt")
        if self.stress and self.kind != "humblebench":
            raise ValueError("stress settings apply only to kind 'humblebench'")
        return self

    @property
    def uses_negatives(self) -> bool:
        return self.kind in ("realistic", "adversarial") and self.n_distractors > 0

    @property
    def uses_gold(self) -> bool:
        return self.kind in ("oracle", "realistic")

    @property
    def id(self) -> str:
        """Readable and unique: ``realistic-n2-pos_any-neg_text-none-s0`` (+ hash of the rest)."""
        if self.kind == "humblebench":
            name = "humblebench-" + ("__".join(self.stress) if self.stress else "common")
        elif self.kind in ("knowhal", "parametric"):
            name = f"{self.kind}-{self.strictness}"
        elif self.kind == "oracle":
            name = f"oracle-pos_{self.positive_modality}-{self.strictness}"
        else:
            name = (f"{self.kind}-n{self.n_distractors}-pos_{self.positive_modality}"
                    f"-neg_{self.negative_modality}-{self.strictness}")
        return f"{name}-{stable_id(self.model_dump(mode='json'), length=8)}"
