"""mmrag.scenarios: from a sample and a ScenarioSpec to the exact prompt a model sees.

Public names: :class:`ScenarioSpec`, :func:`compose`, :func:`applicable`,
:class:`ScenarioNotApplicable`, :class:`Sweep`, :func:`load_sweep`, :func:`builtin_sweeps`,
:class:`PromptTemplate`, :func:`get_template`, :func:`load_template`, :func:`noise_image`,
:class:`ScenarioKind`, :data:`SCENARIO_KINDS`, :func:`register_kind`, :func:`get_kind` (a scenario kind is a
registered object; packages add one through the ``mmrag.scenario_kinds`` entry-point group).
"""

from mmrag.scenarios.base import ScenarioNotApplicable
from mmrag.scenarios.budget import apply_budget, doc_tokens
from mmrag.scenarios.compose import applicable, compose
from mmrag.scenarios.humblebench import noise_image, parse_question
from mmrag.scenarios.kinds import (
    SCENARIO_KINDS,
    STRESS_JOINER,
    ScenarioKind,
    all_kinds,
    get_kind,
    kind_ids,
    kind_order,
    register_kind,
    scenario_label,
)
from mmrag.scenarios.spec import (
    MODALITIES,
    STRESS_ORDER,
    STRICTNESS_LEVELS,
    HumbleStress,
    ModalityChoice,
    ScenarioSpec,
    Strictness,
)
from mmrag.scenarios.sweep import Sweep, builtin_sweeps, load_sweep
from mmrag.scenarios.templates import PromptTemplate, bundled_template_ids, get_template, load_template

__all__ = [
    "SCENARIO_KINDS",
    "STRESS_JOINER",
    "MODALITIES",
    "all_kinds",
    "get_kind",
    "kind_ids",
    "kind_order",
    "register_kind",
    "scenario_label",
    "STRESS_ORDER",
    "STRICTNESS_LEVELS",
    "HumbleStress",
    "ModalityChoice",
    "PromptTemplate",
    "ScenarioKind",
    "ScenarioNotApplicable",
    "ScenarioSpec",
    "Strictness",
    "Sweep",
    "applicable",
    "apply_budget",
    "builtin_sweeps",
    "bundled_template_ids",
    "compose",
    "doc_tokens",
    "get_template",
    "load_sweep",
    "load_template",
    "noise_image",
    "parse_question",
]
