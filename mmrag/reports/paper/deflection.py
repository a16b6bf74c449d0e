"""VLM-DeflectionBench (arXiv 2604.12033): Tables 2-9 and Figures 3-5, laid out as the paper does.

Column names are ``{scenario}_{acc|defl|hall}`` (percent, with ``_lo`` / ``_hi``); the row keys are
the paper's (``model``; ``severity`` None / Soft / Moderate / Severe; ``source``; ``positive`` /
``negative`` Textual / Visual / MM).  Tables 2 and Figures 4 and 5 read a curation folder
(``mmrag curate``, or ``mmrag reproduce deflectionbench --gating-model M ...``).

Settings.  The paper's own numbers say that Tables 6, 8 and 9 share one setting: Table 8's rows
weighted by their sample counts give the Moderate rows of Tables 6 and 9 within 0.2 points in all
12 columns, and not Table 4's row (``tests/test_paper_data.py`` derives it).  So Table 8 reads the
Moderate cells of the strictness presets (``STRICTNESS_PRESETS``), Table 4 its own preset.  Table
4's setting is not stated by the paper and its row equals no strictness level: the preset runs it
at moderate, the nearest, which is mmrag's choice (docs/reproduce.md).
"""

from __future__ import annotations

import pandas as pd

from mmrag.benchmarks.family import DEFLECTION
from mmrag.reports.paper import Artifact, Context, Paper, register_paper
from mmrag.reports.paper.cells import triple, wide
from mmrag.reports.paper.curation_figures import (
    curation_n,
    draw_category_shift,
    draw_incremental_gating,
    retained_per_source,
)
from mmrag.scenarios.kinds import ADVERSARIAL, ORACLE, PARAMETRIC, REALISTIC

#: the paper's four scenarios, in its column order, from the scenario-kind registry
SCENARIOS = tuple(k.id for k in (PARAMETRIC, ORACLE, REALISTIC, ADVERSARIAL))
SEVERITY = {"none": "None", "soft": "Soft", "moderate": "Moderate", "severe": "Severe"}
MODALITY = {"text": "Textual", "image": "Visual", "multimodal": "MM"}


def table_3(ctx: Context) -> pd.DataFrame:
    """Dataset statistics of the samples the run covered, per source and overall (Table 3's rows)."""
    samples = {r.sample.id: r.sample for r in ctx.records() if r.benchmark_kind == DEFLECTION.id}
    groups: dict[str, list] = {}
    for s in samples.values():
        groups.setdefault(s.source or "?", []).append(s)
    rows = []
    for src, ss in [*sorted(groups.items()), ("all", list(samples.values()))]:
        images = {im.sha256 or im.path for s in ss for im in s.images}
        rows.append(
            {
                "source": src,
                "total_samples": len(ss),
                "unique_questions": len({s.question for s in ss}),
                "unique_query_images": len(images),
                "avg_question_words": sum(len(s.question.split()) for s in ss) / len(ss),
                "avg_gold_contexts": sum(len(s.gold_doc_ids) for s in ss) / len(ss),
                "avg_negative_contexts": sum(len(s.metadata.get("negative_doc_ids") or []) for s in ss) / len(ss),
            }
        )
    return pd.DataFrame(rows)


def _needs_deflection_records(ctx: Context) -> str | None:
    has = (ctx.df["benchmark_kind"] == DEFLECTION.id).any() if len(ctx.df) else False
    return None if has else "no VLM-DeflectionBench records in these runs"


def table_4(ctx: Context) -> pd.DataFrame:
    d = ctx.rows(("deflectionbench-paper",))
    return wide(d, ["model"], "kind", SCENARIOS, ctx.opts)


def table_5(ctx: Context) -> pd.DataFrame:
    d = ctx.rows(("modality-matrix",))
    rows = []
    for (model, pos, neg), g in d.groupby(["model", "positive_modality", "negative_modality"], sort=True):
        row = {
            "model": model,
            "positive": MODALITY.get(pos, pos),
            "negative": MODALITY.get(neg, neg),
            "n": int(g["sample_id"].nunique()),
        }
        triple(row, "", g, ctx.opts)
        rows.append(row)
    t = pd.DataFrame(rows)
    order = {v: i for i, v in enumerate(MODALITY.values())}
    return (
        t.sort_values(
            ["model", "positive", "negative"], key=lambda c: c.map(order) if c.name != "model" else c, ignore_index=True
        )
        if len(t)
        else t
    )


def _severity_table(ctx: Context, preset: str, kinds: tuple[str, ...]) -> pd.DataFrame:
    d = ctx.rows((preset,))
    t = wide(d.assign(severity=d["strictness"].map(SEVERITY)), ["model", "severity"], "kind", kinds, ctx.opts)
    if t.empty:
        return t
    rank = {v: i for i, v in enumerate(SEVERITY.values())}
    return t.sort_values(
        ["model", "severity"], key=lambda c: c.map(rank) if c.name == "severity" else c, ignore_index=True
    )


def table_6(ctx: Context) -> pd.DataFrame:
    return _severity_table(ctx, "strictness", (REALISTIC.id, ADVERSARIAL.id))


#: Tables 6 and 9: realistic + adversarial, and parametric + oracle, at every strictness level
STRICTNESS_PRESETS = ("strictness", "strictness-parametric-oracle")
#: the level the published Table 8 is at (its rows weighted by n give Tables 6 / 9 at this level)
TABLE_8_STRICTNESS = "moderate"


def _needs_moderate(ctx: Context) -> str | None:
    """Table 8 reads only the Moderate cells: a run of the strictness presets' other cells (the
    parametric scenario alone, say) has none, and the table would be empty."""
    d = ctx.rows(STRICTNESS_PRESETS)
    if len(d) and (d["strictness"] == TABLE_8_STRICTNESS).any():
        return None
    return f"no records at {TABLE_8_STRICTNESS} strictness (presets {', '.join(STRICTNESS_PRESETS)})"


def table_8(ctx: Context) -> pd.DataFrame:
    """Per model and source, the four scenarios at Tables 6 and 9's Moderate level (module docstring)."""
    d = ctx.rows(STRICTNESS_PRESETS)
    d = d[d["strictness"] == TABLE_8_STRICTNESS]
    return wide(d, ["model", "source"], "kind", SCENARIOS, ctx.opts, n_col=True).sort_values(
        ["model", "n"], ascending=[True, False], ignore_index=True
    )


def table_9(ctx: Context) -> pd.DataFrame:
    return _severity_table(ctx, "strictness-parametric-oracle", (PARAMETRIC.id, ORACLE.id))


def figure_3(ctx: Context):
    from mmrag.reports.paper.distractors import draw

    return draw(ctx, DATA_FILE)


DATA_FILE = "deflectionbench.yaml"


def _needs_curation(ctx: Context) -> str | None:
    if ctx.curation is None:
        return "needs gating models: pass `--gating-model` to `mmrag reproduce` (or `--curation DIR` to `mmrag report`)"
    if not (ctx.curation / "stage1_parametric.jsonl").is_file():
        return f"no finished curation in {ctx.curation.name}"
    return None


NOT_A_MEASUREMENT = "an illustration of the benchmark, not a measurement"
QUALITATIVE = "qualitative examples of single answers: `mmrag browse DIR/run` shows yours"

register_paper(
    Paper(
        name="deflectionbench",
        title="Benchmarking Deflection and Hallucination in Large Vision-Language Models",
        citation="Moratelli et al., arXiv 2604.12033 (ACL 2026)",
        family=DEFLECTION.id,
        data_file=DATA_FILE,
        curates=True,
        triples=True,
        judge="GPT-4o (92.6 % agreement with people on 400 replies, the paper's Table 7)",
        artifacts=(
            Artifact("figure_1", "figure", "Overview of VLM-DeflectionBench", why_not=NOT_A_MEASUREMENT),
            Artifact(
                "table_1",
                "table",
                "Comparison with current KB-VQA benchmarks",
                why_not="a comparison of benchmarks' features from the literature, not a measurement",
            ),
            Artifact(
                "figure_2",
                "figure",
                "Pipeline of VLM-DeflectionBench",
                why_not="a diagram of the curation pipeline "
                "(mmrag/curation implements it; Table 2 and Figures 4-5 measure it)",
            ),
            Artifact(
                "table_2",
                "table",
                "Per-source breakdown: retained samples and retained share",
                retained_per_source,
                needs=_needs_curation,
                n_of=curation_n,
                note="Paper: Stages I-III with k_min 5; its 'Filtered (%)' is, per its caption, the share retained. "
                "mmrag's choice: the gating models and their order (yours).",
            ),
            Artifact(
                "table_3",
                "table",
                "Global statistics (per source and overall)",
                table_3,
                needs=_needs_deflection_records,
                note="over the samples the run covered (all of them without --limit); negatives are each "
                "sample's curated negatives",
            ),
            Artifact(
                "table_4",
                "table",
                "Performance across evaluation scenarios (2 negatives)",
                table_4,
                presets=("deflectionbench-paper",),
                note="Paper: 2 negatives. mmrag's choice: strictness moderate (the paper does not state Table 4's; "
                "its rows lie nearest the Moderate rows of Tables 6 and 9 but equal none), negatives mixed across "
                "modalities from the curated ones, gold order random.",
            ),
            Artifact(
                "table_5",
                "table",
                "Effect of negative-context modality (realistic)",
                table_5,
                presets=("modality-matrix",),
                note="Paper: realistic scenario, gold of one modality x negatives of one modality. mmrag's choice: "
                "strictness none and 2 negatives (neither is stated for Table 5).",
            ),
            Artifact(
                "figure_3",
                "figure",
                "Effect of distractor quantity (realistic, with the oracle for reference)",
                figure_3,
                presets=("distractor-curve-paper",),
                note="Paper: realistic with more negatives, oracle as the 0-negative reference. mmrag's choice: "
                "1, 2, 4, 8 negatives (the paper's counts are not in its text) at Table 4's strictness (moderate); "
                "the oracle point is the oracle cell. Published markers: the paper's Table 4 (the figure's own "
                "numbers are not in its text).",
            ),
            Artifact(
                "table_6",
                "table",
                "Prompt strictness in the realistic and adversarial scenarios",
                table_6,
                presets=("strictness",),
                note="Paper: the four strictness prompts (Figures 6-9; their exact wording is not public, ours "
                "follow their intent). mmrag's choice: 2 negatives, as Table 4.",
            ),
            Artifact(
                "figure_4",
                "figure",
                "Category distributions before and after curation",
                draw_category_shift,
                needs=_needs_curation,
                n_of=curation_n,
                note="category = metadata.category, else the question slot or type",
            ),
            Artifact(
                "figure_5",
                "figure",
                "Parametric accuracy and dataset size as gating models are added",
                draw_incremental_gating,
                needs=_needs_curation,
                n_of=curation_n,
                note="Stage I with the first k gating models, in the order given. The paper gives no value of "
                "the figure in its text (only that over 90 % of samples are removed after four models).",
            ),
            Artifact(
                "table_7",
                "table",
                "Human validation of the GPT-4o judgments",
                why_not="a human study; `mmrag judge-agreement` measures a judge against your own labels",
            ),
            Artifact(
                "table_8",
                "table",
                "Breakdown per source",
                table_8,
                presets=STRICTNESS_PRESETS,
                needs=_needs_moderate,
                note="Paper's setting, derived from its numbers: Moderate strictness (its rows weighted by n give the "
                "Moderate rows of Tables 6 and 9), not Table 4's. Sources are the data's own.",
            ),
            Artifact(
                "table_9",
                "table",
                "Prompt strictness in the parametric and oracle scenarios",
                table_9,
                presets=("strictness-parametric-oracle",),
                note="Paper: the four strictness prompts in the parametric and oracle scenarios.",
            ),
            *[
                Artifact(
                    f"figure_{i}",
                    "figure",
                    t,
                    why_not="the prompt's text: see mmrag/scenarios/templates/ "
                    "(the paper's exact wording is not public)",
                )
                for i, t in ((6, "System prompt"), (7, "Soft prompt"), (8, "Moderate prompt"), (9, "Severe prompt"))
            ],
            *[Artifact(f"figure_{i}", "figure", "Qualitative example", why_not=QUALITATIVE) for i in range(10, 17)],
        ),
    )
)
