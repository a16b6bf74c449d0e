"""Sweeps: expansion, stable ids, de-duplication, YAML errors that name file/line/field, and the
resume property (a second run of a sweep composes no new cell; a new axis value only new cells)."""

from __future__ import annotations

import textwrap

import pytest
from scenario_doubles import make_world

from mmrag.errors import InputError
from mmrag.runs.records import record_key
from mmrag.scenarios import ScenarioSpec, Sweep, builtin_sweeps, compose, load_sweep


def write(tmp_path, text: str, name: str = "sweep.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_ready_made_sweeps_reproduce_the_paper_designs():
    assert set(builtin_sweeps()) >= {"distractor-curve", "modality-matrix", "strictness"}
    curve = load_sweep("distractor-curve").expand()
    assert [(s.kind, s.n_distractors) for s in curve] == [("realistic", n) for n in (0, 1, 2, 4, 8)] + [("oracle", 0)]
    matrix = load_sweep("modality-matrix").expand()
    assert [(s.positive_modality, s.negative_modality) for s in matrix] == [
        (p, n) for p in ("text", "image") for n in ("text", "image", "multimodal")
    ]
    assert all(s.kind == "realistic" and s.n_distractors == 2 for s in matrix)
    table = load_sweep("strictness").expand()
    assert [(s.kind, s.strictness) for s in table] == [
        (k, st) for k in ("realistic", "adversarial") for st in ("none", "soft", "moderate", "severe")
    ]


def test_expansion_is_deterministic_and_ids_ignore_axis_order(tmp_path):
    a = write(
        tmp_path,
        """
        name: grid
        base: {kind: realistic}
        axes:
          n_distractors: [1, 2]
          negative_modality: [text, image]
          strictness: [none, severe]
        """,
        "a.yaml",
    )
    b = write(
        tmp_path,
        """
        name: grid
        axes:
          strictness: [severe, none]
          negative_modality: [image, text]
          n_distractors: [2, 1]
        base: {kind: realistic}
        """,
        "b.yaml",
    )
    ea, eb = load_sweep(a).expand(), load_sweep(b).expand()
    assert len(ea) == 8 and len({s.id for s in ea}) == 8
    assert {s.id for s in ea} == {s.id for s in eb}
    assert [s.id for s in ea] == [s.id for s in load_sweep(a).expand()]  # same order every time
    # first axis is the outer loop
    assert [(s.n_distractors, s.negative_modality, s.strictness) for s in ea][:3] == [
        (1, "text", "none"),
        (1, "text", "severe"),
        (1, "image", "none"),
    ]


def test_duplicates_are_removed():
    sweep = Sweep(
        name="d",
        base={"kind": "realistic"},
        axes={"n_distractors": [2, 2, 4]},
        extra=[{"n_distractors": 4}, {"kind": "oracle", "n_distractors": 3}, {"kind": "oracle"}],
    )
    specs = sweep.expand()
    assert [(s.kind, s.n_distractors) for s in specs] == [("realistic", 2), ("realistic", 4), ("oracle", 0)]


def test_adding_a_value_only_adds_cells():
    old = Sweep(name="c", base={"kind": "realistic"}, axes={"n_distractors": [0, 1, 2]}).expand()
    new = Sweep(name="c", base={"kind": "realistic"}, axes={"n_distractors": [0, 1, 2, 16]}).expand()
    assert {s.id for s in old} < {s.id for s in new}
    assert [s.n_distractors for s in new if s.id not in {o.id for o in old}] == [16]


def test_rerun_skips_done_cells(tmp_path):
    """What the run engine does with these ids: key = (sample, spec.id, model); only missing keys run."""
    sample, store, miner = make_world(tmp_path)
    samples = [sample.model_copy(update={"id": f"q{i}"}) for i in range(3)]
    done: dict[str, str] = {}
    calls = []

    def run(specs: list[ScenarioSpec]) -> int:
        before = len(calls)
        for spec in specs:
            for s in samples:
                key = record_key(s.id, spec.id, "fake-model@1")
                if key not in done:
                    prompt = compose(s, spec, miner=miner)
                    calls.append(prompt.id)
                    done[key] = prompt.id
        return len(calls) - before

    base = Sweep(
        name="r",
        base={"kind": "realistic", "negative_modality": "any"},
        axes={"n_distractors": [0, 1, 2]},
        extra=[{"kind": "oracle"}],
    )
    assert run(base.expand()) == 4 * 3
    assert run(base.expand()) == 0  # second run of the same sweep: no model call
    reordered = Sweep(
        name="r",
        base={"negative_modality": "any", "kind": "realistic"},
        axes={"n_distractors": [2, 1, 0]},
        extra=[{"kind": "oracle", "n_distractors": 5}],
    )
    assert run(reordered.expand()) == 0
    grown = base.model_copy(update={"axes": {"n_distractors": [0, 1, 2, 4]}})
    assert run(grown.expand()) == 3  # only the new value's cells


@pytest.mark.parametrize(
    "text,field,line,match",
    [
        ("name: x\naxes:\n  n_distractor: [1, 2]\n", "axes.n_distractor", 3, "did you mean 'n_distractors'"),
        ("name: x\nbase:\n  kind: realistic\naxes:\n  n_distractors: [1, -3]\n", "axes.n_distractors[1]", 5, "-3"),
        ("name: x\naxes:\n  strictness: [none, harsh]\n", "axes.strictness[1]", 3, "harsh"),
        ("name: x\nbase:\n  kind: retrieval\n", "base.kind", 3, "retrieval"),
        ("name: x\naxis:\n  strictness: [none]\n", "axis", 2, "did you mean 'axes'"),
        ("name: x\naxes:\n  strictness: []\n", "axes.strictness", 3, "non-empty"),
        (
            "name: x\nextra:\n  - {kind: oracle, positve_modality: text}\n",
            "extra[0].positve_modality",
            3,
            "positive_modality",
        ),
        ("name: x\nbase: {kind: realistic}\naxes:\n  kind: [oracle]\n", "axes.kind", 4, "both in base and in axes"),
        ("name: x\naxes:\n  kind: [adversarial]\n  n_distractors: [0]\n", "axes", 2, "n_distractors >= 1"),
        ("axes:\n  kind: [oracle]\n", "name", 1, "required"),
    ],
)
def test_bad_sweeps_name_file_line_and_field(tmp_path, text, field, line, match):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=match) as e:
        load_sweep(path)
    assert e.value.path == str(path) and e.value.field == field and e.value.line == line


def test_yaml_syntax_error_has_a_line(tmp_path):
    path = write(tmp_path, "name: x\naxes:\n  kind: [oracle\n")
    with pytest.raises(InputError, match="invalid YAML") as e:
        load_sweep(path)
    assert e.value.line is not None and e.value.path == str(path)


def test_a_duplicate_key_is_refused_with_its_line_not_last_wins(tmp_path):
    path = write(tmp_path, "name: x\naxes:\n  n_distractors: [1, 2]\naxes:\n  strictness: [none]\n")
    with pytest.raises(InputError, match="duplicate key 'axes' \\(first on line 2\\)") as e:
        load_sweep(path)
    assert e.value.line == 4 and e.value.path == str(path)


def test_skip_invalid_lists_the_skipped_cells():
    sweep = Sweep(name="s", axes={"kind": ["realistic", "adversarial"], "n_distractors": [0, 2]}, skip_invalid=True)
    specs, skipped = sweep.plan()
    assert [(s.kind, s.n_distractors) for s in specs] == [("realistic", 0), ("realistic", 2), ("adversarial", 2)]
    assert (
        skipped == [{"cell": {"kind": "adversarial", "n_distractors": 0}, "reason": skipped[0]["reason"]}]
        and "n_distractors >= 1" in skipped[0]["reason"]
    )


def test_stress_axis_and_unknown_sweep_name(tmp_path):
    path = write(
        tmp_path,
        """
        name: humble
        base: {kind: humblebench}
        axes:
          stress: [[], [noise_image], [nota_only], [forced_grounding_prompt, noise_image]]
        """,
    )
    specs = load_sweep(path).expand()
    assert [s.stress for s in specs] == [
        (),
        ("noise_image",),
        ("nota_only",),
        ("noise_image", "forced_grounding_prompt"),
    ]
    with pytest.raises(InputError, match="ready-made sweeps: deflectionbench-paper, distractor-curve"):
        load_sweep("no-such-sweep")
