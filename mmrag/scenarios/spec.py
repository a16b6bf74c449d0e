"""ScenarioSpec: every experimental knob of a prompt is a field here.

VLM-DeflectionBench's four retrieval scenarios, the distractor count / modality / strictness
ablations, HumbleBench's stress settings and KnowHal's no-context setting are all values of one
spec, so a sweep is just a grid over its fields and a scenario id is a hash of it.

The id is a hash of the *canonical* spec (key-sorted JSON of every field), so it does not depend
on the order in which a sweep listed its axes nor on the order of the ``stress`` tuple (which is
normalised to the official HumbleBench order on construction).  Fields a kind ignores are reset to
their defaults on construction (an oracle has ``n_distractors == 0`` whatever was asked), so two
specs that produce the same prompts share one id.  Results are keyed by
``(sample id, spec.id, model fingerprint)``, which is what makes a re-run of a sweep skip the
cells it already has.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from mmrag.errors import InputError
from mmrag.scenarios.kinds import ORACLE, ScenarioKind, get_kind, kind_ids, kinds_where
from mmrag.schema import stable_id

ModalityChoice = Literal["text", "image", "multimodal", "any"]
Strictness = Literal["none", "soft", "moderate", "severe"]
NegativesFrom = Literal["curated", "regenerate"]
HumbleStress = Literal["noise_image", "nota_only", "shuffle_options", "cautious_prompt", "forced_grounding_prompt"]

#: The order in which the official HumbleBench code names (``build_setting_name``) and applies the
#: settings; ``stress`` is stored in this order whatever order the user wrote it in.
STRESS_ORDER: tuple[str, ...] = (
    "noise_image",
    "nota_only",
    "shuffle_options",
    "cautious_prompt",
    "forced_grounding_prompt",
)
STRICTNESS_LEVELS: tuple[str, ...] = ("none", "soft", "moderate", "severe")
MODALITIES: tuple[str, ...] = ("text", "image", "multimodal", "any")

#: np.random's global seed in the official HumbleBench ``main.py`` (``set_global_seed(3720)``), from
#: which its one noise image is drawn.
OFFICIAL_NOISE_SEED = 3720


def _known_kind(v: str) -> str:
    if _kind_or_none(v) is None:
        raise ValueError(f"unknown scenario kind '{v}'; known: {', '.join(kind_ids())}")
    return v


#: a scenario kind id, checked against the registry (built-ins and ``mmrag.scenario_kinds`` plug-ins)
KindId = Annotated[str, AfterValidator(_known_kind)]

_DEFAULTS: dict[str, object] = {
    "n_distractors": 0,
    "positive_modality": "any",
    "negative_modality": "text",
    "gold_position": "random",
    "max_context_tokens": None,
    "negatives": "curated",
    "shuffle_seed": 42,
    "noise_seed": OFFICIAL_NOISE_SEED,
}


#: distractors a kind with negatives shows when the spec does not say
DEFAULT_DISTRACTORS = 2


def _kind_or_none(kind_id: object) -> ScenarioKind | None:
    try:
        return get_kind(str(kind_id))
    except InputError:
        return None  # an unknown kind: the field validator reports it, naming the known ones


def canonical_fields(data: dict) -> dict:
    """``data`` with the fields its kind ignores (those outside ``kind.knobs``) set to their neutral
    values and ``stress`` in the official order (see :class:`ScenarioSpec`)."""
    data = dict(data)
    kind = _kind_or_none(data.get("kind", ORACLE.id))
    knobs = kind.knobs if kind is not None else frozenset(_DEFAULTS)
    ignored = [name for name in _DEFAULTS if name not in knobs]
    raw = data.get("stress") or ()
    raw = (raw,) if isinstance(raw, str) else raw
    stress = tuple(raw) if isinstance(raw, (list, tuple)) else ()
    if stress:  # unknown names are kept (at the end) so that validation reports them
        data["stress"] = tuple(x for x in STRESS_ORDER if x in stress) + tuple(
            x for x in stress if x not in STRESS_ORDER
        )
    if "shuffle_options" not in stress:
        ignored.append("shuffle_seed")
    if "noise_image" not in stress:
        ignored.append("noise_seed")
    if "n_distractors" in knobs and data.get("n_distractors", DEFAULT_DISTRACTORS) == 0:
        ignored += ["negative_modality", "negatives"]  # no negatives shown: where they would come from is moot
    for name in ignored:
        data[name] = _DEFAULTS[name]
    return data


class ScenarioSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the id of a registered :class:`~mmrag.scenarios.kinds.ScenarioKind`
    kind: KindId = ORACLE.id
    n_distractors: int = Field(default=DEFAULT_DISTRACTORS, ge=0, le=64)
    positive_modality: ModalityChoice = "any"
    negative_modality: ModalityChoice = "text"
    #: "curated": the sample's own negatives (Stage III survivors, WebQA negFacts, ...), the miner
    #: only filling a shortfall; "regenerate": always mine from the indices (mmrag.scenarios.negatives)
    negatives: NegativesFrom = "curated"
    strictness: Strictness = "none"
    #: "random" | "first" | "last" | an integer index among the contexts (clamped to the end)
    gold_position: Literal["random", "first", "last"] | int = "random"
    seed: int = 0
    #: evidence budget in whitespace tokens (title + text of every shown document); None = unlimited
    max_context_tokens: int | None = Field(default=None, ge=0)
    #: images per prompt, query images included; None = unlimited
    max_images: int | None = Field(default=None, ge=0)
    #: HumbleBench stress transforms, applied in the official order; empty = the common setting
    stress: tuple[HumbleStress, ...] = ()
    shuffle_seed: int = 42
    #: seed of the HumbleBench noise image (np.random.RandomState); default = the official global seed
    noise_seed: int = OFFICIAL_NOISE_SEED
    #: override of the main template: a bundled template id or a path to a template YAML file
    template: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _canonical(cls, data):
        """Reset the fields a kind ignores to their defaults, so equivalent specs share one id.

        An oracle asked for with ``n_distractors=4`` shows exactly what one with 0 shows; giving them
        different ids would re-run identical prompts (and split their results) across sweeps.
        """
        return canonical_fields(data) if isinstance(data, dict) else data

    @field_validator("gold_position")
    @classmethod
    def _position(cls, v):
        if isinstance(v, int) and v < 0:
            raise ValueError("gold_position index must be >= 0")
        return v

    @model_validator(mode="after")
    def _check(self) -> ScenarioSpec:
        if "noise_image" in self.stress and "nota_only" in self.stress:
            raise ValueError("stress: noise_image cannot be combined with nota_only (as in the official code)")
        if "cautious_prompt" in self.stress and "forced_grounding_prompt" in self.stress:
            raise ValueError("stress: cautious_prompt cannot be combined with forced_grounding_prompt")
        kind = self.kind_def
        if self.stress and "stress" not in kind.knobs:
            takers = " | ".join(f"'{k}'" for k in kinds_where(lambda k: "stress" in k.knobs))
            raise ValueError(f"stress settings apply only to kind {takers} (not '{self.kind}')")
        if not kind.takes_strictness and self.strictness != "none":
            raise ValueError(f"strictness does not apply to kind '{self.kind}' (use the cautious_prompt stress)")
        if self.n_distractors < kind.min_distractors:
            raise ValueError(f"scenario kind '{self.kind}' needs n_distractors >= {kind.min_distractors}")
        return self

    @property
    def kind_def(self) -> ScenarioKind:
        """The registered kind object this spec names."""
        return get_kind(self.kind)

    @property
    def uses_negatives(self) -> bool:
        return self.kind_def.uses_negatives and self.n_distractors > 0

    @property
    def uses_gold(self) -> bool:
        return self.kind_def.uses_gold

    @property
    def label(self) -> str:
        """The one human label (``realistic n=2 neg=text``) shown by the console, summary and reports."""
        return self.kind_def.describe(self.model_dump(mode="json"))

    @property
    def id(self) -> str:
        """Readable and unique: ``realistic-n2-pos_any-neg_text-none-<hash8>``.

        The hash covers every field (key-sorted), so two specs that differ in any knob never share
        an id, and the same spec always gets the same id whatever order it was built in.
        """
        name = self.kind_def.name(self)
        # canonicalised again: a spec made by ``model_copy(update=...)`` skipped the validators
        return f"{name}-{stable_id(canonical_fields(self.model_dump(mode='json')), length=8)}"

    def compose(self, sample: Any, miner: Any = None, store: Any = None) -> Any:
        """The prompt a model sees for ``sample`` under this scenario, as a run builds it
        (:func:`mmrag.scenarios.compose`: pure and seeded).  Scenarios with negatives need a
        ``miner`` (``mmrag.knowledge_base(...).miner()``); gold evidence comes from ``store``,
        default the miner's.  Raises ``ScenarioNotApplicable`` when the sample does not fit."""
        from mmrag.scenarios.compose import compose

        return compose(sample, self, miner=miner, store=store)
