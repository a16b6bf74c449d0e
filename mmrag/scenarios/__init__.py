"""mmrag.scenarios: from a sample and a ScenarioSpec to the exact prompt a model sees.

Public names: :class:`ScenarioSpec`, :func:`compose`, :func:`applicable`,
:class:`ScenarioNotApplicable`, :class:`Sweep`, :func:`load_sweep`, :func:`builtin_sweeps`,
:class:`PromptTemplate`, :func:`get_template`, :func:`load_template`, :func:`noise_image`,
:data:`SCENARIO_BUILDERS` (register a builder to add a scenario kind).
"""

from mmrag.scenarios.base import SCENARIO_BUILDERS, ScenarioNotApplicable
from mmrag.scenarios.budget import apply_budget, doc_tokens
from mmrag.scenarios.compose import applicable, compose
from mmrag.scenarios.humblebench import noise_image, parse_question
from mmrag.scenarios.spec import (STRESS_ORDER, STRICTNESS_LEVELS, HumbleStress, ModalityChoice, ScenarioKind,
                                  ScenarioSpec, Strictness)
from mmrag.scenarios.sweep import Sweep, builtin_sweeps, load_sweep
from mmrag.scenarios.templates import PromptTemplate, bundled_template_ids, get_template, load_template

__all__ = [
    "SCENARIO_BUILDERS", "STRESS_ORDER", "STRICTNESS_LEVELS", "HumbleStress", "ModalityChoice", "PromptTemplate",
    "ScenarioKind", "ScenarioNotApplicable", "ScenarioSpec", "Strictness", "Sweep", "applicable", "apply_budget",
    "builtin_sweeps", "bundled_template_ids", "compose", "doc_tokens", "get_template", "load_sweep",
    "load_template", "noise_image", "parse_question",
]
