"""Scenario kinds as registered objects: what a kind shows, which knobs it reads, its paper order.

A kind is an object rather than a name string, so that no stage restates the kinds in an
``if kind in (...)`` over names.  Each kind is one :class:`ScenarioKind` that owns its id, its label, whether
its prompts carry gold evidence and/or hard negatives, the spec fields it reads (every other knob is
reset on construction, so two specs that show the same prompts share one id), its applicability
rule, its prompt builder and its place in the paper's order (parametric, oracle, realistic,
adversarial; then the no-context benchmarks).  Every stage asks the kind, never the name.

Built-in kinds are registered below; a third-party package adds one through the entry-point group
``mmrag.scenario_kinds`` (an entry point naming a :class:`ScenarioKind` instance), with no edit to
mmrag.  ``builder`` and ``applicability`` are dotted paths ``pkg.module:function`` resolved on first
use, so defining a kind imports nothing heavy and no import cycle can form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mmrag.errors import InputError
from mmrag.registry import Registry, load_dotted

if TYPE_CHECKING:  # pragma: no cover
    from mmrag.scenarios.spec import ScenarioSpec
    from mmrag.schema import Prompt, Sample

#: The spec fields a kind may read besides the ones every kind reads (strictness, seed, template,
#: max_images).  A field outside a kind's ``knobs`` is reset to its default on construction.
KNOBS = (
    "n_distractors",
    "positive_modality",
    "negative_modality",
    "negatives",
    "gold_position",
    "max_context_tokens",
    "stress",
    "shuffle_seed",
    "noise_seed",
)

#: How stacked HumbleBench stress settings are joined in ids, labels, tables and frames (the joiner
#: of the official ``build_setting_name``).
STRESS_JOINER = "__"


@dataclass(frozen=True)
class ScenarioKind:
    """One scenario kind.  ``order`` places it in tables and figures (the paper's order)."""

    id: str
    label: str
    order: int
    builder: str
    uses_gold: bool = False
    uses_negatives: bool = False
    knobs: frozenset[str] = field(default_factory=frozenset)
    #: ``pkg.module:fn(sample, spec, store) -> reason | None``; None = every sample fits
    applicability: str | None = None
    #: the fewest distractors the kind makes sense with (adversarial with 0 is parametric)
    min_distractors: int = 0
    #: whether the strictness instruction applies (HumbleBench has its own cautious prefix instead)
    takes_strictness: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.knobs) - set(KNOBS)
        if unknown:
            raise ValueError(f"scenario kind '{self.id}': unknown knobs {sorted(unknown)}; known: {', '.join(KNOBS)}")

    @property
    def uses_contexts(self) -> bool:
        """Whether prompts of this kind show retrieved documents (gold, negatives or both)."""
        return self.uses_gold or self.uses_negatives

    def build(self, sample: Sample, spec: ScenarioSpec, miner: Any = None, store: Any = None) -> Prompt:
        return _resolve(self.builder)(sample, spec, miner, store)

    def applicable(self, sample: Sample, spec: ScenarioSpec, store: Any = None) -> str | None:
        """None when ``sample`` fits ``spec``, else why not (cheap: no mining)."""
        return _resolve(self.applicability)(sample, spec, store) if self.applicability else None

    def name(self, spec: ScenarioSpec) -> str:
        """The readable part of ``spec.id`` (kept byte-stable: run directories are keyed by it)."""
        if "stress" in self.knobs:
            return f"{self.id}-" + (STRESS_JOINER.join(spec.stress) if spec.stress else "common")
        parts = [self.id]
        if "n_distractors" in self.knobs:
            parts.append(f"n{spec.n_distractors}")
        if self.knobs & {"positive_modality", "negative_modality"}:
            parts.append(f"pos_{spec.positive_modality}")
        if "negative_modality" in self.knobs:
            parts.append(f"neg_{spec.negative_modality}")
        parts.append(spec.strictness)
        return "-".join(parts)

    def describe(self, spec: dict[str, Any]) -> str:
        """The one human label of a scenario (console, summary.md, reports): ``realistic n=2 neg=text``.

        Takes the spec as a dict (what run records store) so that a record read back labels
        itself the same way the run printed it.
        """
        parts = [self.label]
        if "n_distractors" in self.knobs:
            parts.append(f"n={spec.get('n_distractors')}")
        if "negative_modality" in self.knobs and ("n_distractors" not in self.knobs or spec.get("n_distractors") != 0):
            parts.append(f"neg={spec.get('negative_modality')}")  # no negatives shown: no modality to name
        if "positive_modality" in self.knobs and spec.get("positive_modality", "any") != "any":
            parts.append(f"pos={spec['positive_modality']}")
        if spec.get("strictness", "none") != "none":
            parts.append(f"strict={spec['strictness']}")
        if "stress" in self.knobs:
            parts.append(STRESS_JOINER.join(spec.get("stress") or ()) or "common")
        return " ".join(parts)


_resolved: dict[str, Callable[..., Any]] = {}


def _resolve(path: str) -> Callable[..., Any]:
    if path not in _resolved:
        _resolved[path] = load_dotted(path)
    return _resolved[path]


#: ``SCENARIO_KINDS.get(id) -> ScenarioKind``; entry-point group ``mmrag.scenario_kinds``.
SCENARIO_KINDS: Registry[ScenarioKind] = Registry("scenario kind", group="mmrag.scenario_kinds")


def register_kind(kind: ScenarioKind) -> ScenarioKind:
    """Register ``kind`` under its id (for kinds defined in code; packages use the entry point)."""
    return SCENARIO_KINDS.add(kind)


def get_kind(kind_id: str) -> ScenarioKind:
    """The registered kind ``kind_id`` (built-in or entry point); InputError naming the known ones."""
    return SCENARIO_KINDS.get_instance(kind_id, ScenarioKind, "kind")


def kind_ids() -> list[str]:
    """Every known kind id, in paper order (built-ins first, then plug-ins by their ``order``)."""
    return [k.id for k in all_kinds()]


def all_kinds() -> list[ScenarioKind]:
    return sorted((get_kind(n) for n in SCENARIO_KINDS.names()), key=lambda k: (k.order, k.id))


def kind_order(kind_id: Any) -> tuple[int, str]:
    """Sort key of a kind id in paper order; unknown ids (e.g. a plug-in not installed) sort last."""
    try:
        return (get_kind(str(kind_id)).order, str(kind_id))
    except InputError:
        return (10**6, str(kind_id))


def kinds_where(pred: Callable[[ScenarioKind], bool], ids: Iterable[str] | None = None) -> list[str]:
    """The ids (of ``ids``, default all known) whose kind satisfies ``pred``, in paper order."""
    pool = sorted(set(ids), key=kind_order) if ids is not None else kind_ids()
    return SCENARIO_KINDS.ids_where(pred, get_kind, pool)


def scenario_label(spec: dict[str, Any]) -> str:
    """The one human label of a scenario spec dict; an unknown kind falls back to its id."""
    kind_id = str(spec.get("kind", "?"))
    try:
        return get_kind(kind_id).describe(spec)
    except InputError:
        return kind_id


# -- the built-in kinds (VLM-DeflectionBench's four, then the no-context benchmarks) ----------------

_RETRIEVAL_BUILDER = "mmrag.scenarios.compose:build_retrieval_prompt"
_GOLD_RULE = "mmrag.scenarios.compose:gold_applicable"

PARAMETRIC = register_kind(
    ScenarioKind(
        id="parametric",
        label="parametric",
        order=0,
        builder=_RETRIEVAL_BUILDER,
        knobs=frozenset({"max_context_tokens"}),
        description="no contexts: answer from the model's own knowledge, deflect when it lacks it",
    )
)
ORACLE = register_kind(
    ScenarioKind(
        id="oracle",
        label="oracle",
        order=1,
        builder=_RETRIEVAL_BUILDER,
        uses_gold=True,
        applicability=_GOLD_RULE,
        knobs=frozenset({"positive_modality", "max_context_tokens"}),
        description="the gold evidence only: answer",
    )
)
REALISTIC = register_kind(
    ScenarioKind(
        id="realistic",
        label="realistic",
        order=2,
        builder=_RETRIEVAL_BUILDER,
        uses_gold=True,
        uses_negatives=True,
        applicability=_GOLD_RULE,
        knobs=frozenset(
            {
                "n_distractors",
                "positive_modality",
                "negative_modality",
                "negatives",
                "gold_position",
                "max_context_tokens",
            }
        ),
        description="gold + N hard negatives: answer, ignoring the negatives",
    )
)
ADVERSARIAL = register_kind(
    ScenarioKind(
        id="adversarial",
        label="adversarial",
        order=3,
        builder=_RETRIEVAL_BUILDER,
        uses_negatives=True,
        min_distractors=1,
        knobs=frozenset({"n_distractors", "negative_modality", "negatives", "max_context_tokens"}),
        description="N hard negatives only: deflect",
    )
)
HUMBLEBENCH = register_kind(
    ScenarioKind(
        id="humblebench",
        label="humblebench",
        order=10,
        builder="mmrag.scenarios.humblebench:build_humblebench_prompt",
        applicability="mmrag.scenarios.kinds:_humblebench_applicable",
        takes_strictness=False,
        knobs=frozenset({"stress", "shuffle_seed", "noise_seed"}),
        description="HumbleBench MCQ without context, under its stress settings",
    )
)
KNOWHAL = register_kind(
    ScenarioKind(
        id="knowhal",
        label="knowhal",
        order=11,
        builder="mmrag.scenarios.knowhal:build_knowhal_prompt",
        description="KnowHal positive / false-premise question without context",
    )
)


def _humblebench_applicable(sample: Sample, spec: ScenarioSpec, store: Any = None) -> str | None:
    from mmrag.scenarios.humblebench import applicable

    return applicable(sample, spec)
