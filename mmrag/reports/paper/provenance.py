"""What produced a paper's numbers here, said in every output: the data, the model, the judge, n.

A reproduced table beside the paper's own numbers invites reading the difference as a
reproduction error.  It is not one unless the data, the model and the judge are the paper's, so
``paper.md``, every table's caption and every figure's subtitle say what they were: the data
(the demo world, a generated stand-in, or the benchmark and file read), each model (simulated
with its parameters, or a served / loaded model), the judge (its id as the run recorded it, the
judge the paper used, and the judge's agreement with people where the run has labels) and n.

Everything is read from the run directories (``manifest.json``, the frame's ``judge_id``
column, ``labels/``), never assumed: nothing here knows today's judge id.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: how a simulated stand-in's fingerprint starts (:class:`mmrag.models.baselines.Baseline`: the
#: baselines, the context reader and ``sim-vlm`` are deterministic programs, not VLMs)
SIMULATED_PREFIX = "baseline:"


@dataclass(frozen=True)
class ModelNote:
    name: str
    fingerprint: str

    @property
    def simulated(self) -> bool:
        return self.fingerprint.startswith(SIMULATED_PREFIX)

    def params(self) -> str:
        """A simulated model's parameters as ``k=v`` pairs (its fingerprint's JSON tail)."""
        tail = self.fingerprint[self.fingerprint.find("{") :] if "{" in self.fingerprint else ""
        try:
            p = json.loads(tail) if tail else {}
        except ValueError:
            return tail
        return ", ".join(f"{k}={v}" for k, v in p.items()) if isinstance(p, dict) else tail

    def long(self) -> str:
        if self.simulated:
            ps = self.params()
            return f"`{self.name}`, simulated: a deterministic program standing in for a VLM, not a VLM" + (
                f" (parameters: {ps})" if ps else " (default parameters)"
            )
        from mmrag.redact import redact_text

        return f"`{self.name}`, a real model (fingerprint `{redact_text(self.fingerprint)}`)"

    def short(self) -> str:
        return f"{self.name} ({'simulated' if self.simulated else 'real'})"


@dataclass
class Provenance:
    """The data, models and judge of a paper's runs (see the module docstring)."""

    data: list[str] = field(default_factory=list)
    data_short: list[str] = field(default_factory=list)
    models: list[ModelNote] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    paper_judge: str = ""
    agreement: list[str] = field(default_factory=list)
    demo: bool = False

    @property
    def paper_judge_short(self) -> str:
        """The paper's judge without its agreement note (``GPT-4o``)."""
        return self.paper_judge.split(" (")[0].split(";")[0]

    def judge_text(self) -> str:
        ids = ", ".join(f"`{j}`" for j in self.judges) or "unknown (no manifest)"
        return f"{ids}; the paper's judge: {self.paper_judge}"

    def lines(self) -> list[str]:
        """The Markdown bullet list of ``paper.md``'s "What these numbers are"."""
        agree = "; ".join(self.agreement) or (
            "not measured: the run has no labels (`mmrag label DIR/run`, then `mmrag judge-agreement DIR/run`)"
        )
        out = [
            f"- **Data**: {'; '.join(self.data) or 'unknown (no manifest)'}.",
            f"- **Model{'s' if len(self.models) != 1 else ''}**: "
            + ("; ".join(m.long() for m in self.models) or "unknown (no manifest)")
            + ".",
            f"- **Judge**: {self.judge_text()}.",
            f"- **Judge agreement with people**: {agree}.",
        ]
        if self.demo or any(m.simulated for m in self.models):
            out.append(
                "- **So**: these numbers exercise the harness; a difference from the published rows is not a "
                "reproduction error, because the data, the model or the judge is not the paper's."
            )
        return out

    def caption(self, n: str) -> str:
        """One sentence for a table's caption or a figure's subtitle."""
        models = ", ".join(m.short() for m in self.models) or "?"
        return (
            f"Ours: data {'; '.join(self.data_short) or '?'}; model {models}; judge "
            f"{', '.join(self.judges) or '?'} (paper: {self.paper_judge_short}); {n}."
        )


def n_text(rows: pd.DataFrame) -> str:
    """``n = 40 samples, 160 judged replies`` of an artifact's rows."""
    if rows.empty or "sample_id" not in rows.columns:
        return "n not applicable"
    return f"n = {rows['sample_id'].nunique()} samples, {len(rows)} judged replies"


def _manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / "manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _agreement(run_dir: Path) -> str | None:
    """The judge against the run's labels, or None when the run has none."""
    from mmrag.errors import InputError
    from mmrag.labels import agreement

    if not (Path(run_dir) / "labels").is_dir():
        return None
    try:
        a = agreement(run_dir, n_boot=200)
    except InputError:
        return None
    return f"{a['agreement']:.1f} % agreement, kappa {a['kappa']:.2f}, on {a['n']} replies labelled by {a['labeller']}"


def provenance(run_dirs: tuple[Path, ...], df: pd.DataFrame, *, demo_benchmark: str, paper_judge: str) -> Provenance:
    """What the runs ``run_dirs`` (whose rows are ``df``) were: read from their manifests."""
    p = Provenance(paper_judge=paper_judge)
    fingerprints: dict[str, str] = {}
    for d in run_dirs:
        m = _manifest(d)
        cfg = m.get("config") or {}
        for b in cfg.get("benchmarks") or []:
            name, source = b.get("name"), b.get("source")
            limit = f", first {cfg['limit']} samples" if cfg.get("limit") else ""
            if name == demo_benchmark and not source:
                p.demo = True
                p.data.append(
                    f"the demo world (`{name}`{limit}): a generated stand-in, **not the paper's data**; "
                    "its questions, images, answers (and knowledge base) are generated by mmrag"
                )
                p.data_short.append("demo world (generated stand-in, not the paper's data)")
            else:
                p.data.append(f"`{name}`" + (f" read from `{source}`" if source else "") + limit)
                p.data_short.append(name + (f" read from {source}" if source else ""))
        fingerprints.update(m.get("models") or {})
        if m.get("judge_id"):
            p.judges.append(str(m["judge_id"]))
        note = _agreement(d)
        if note:
            p.agreement.append(note)
    if "judge_id" in df.columns:
        p.judges += [str(j) for j in df["judge_id"].dropna().unique()]
    p.judges = list(dict.fromkeys(p.judges))
    names = sorted(df["model"].unique()) if "model" in df.columns and len(df) else sorted(fingerprints)
    fp_of = dict(zip(df["model"], df["model_fingerprint"])) if {"model", "model_fingerprint"} <= set(df.columns) else {}
    p.models = [ModelNote(n, str(fp_of.get(n) or fingerprints.get(n) or "")) for n in names]
    p.data = list(dict.fromkeys(p.data))
    p.data_short = list(dict.fromkeys(p.data_short))
    return p


def wrapped(text: str, width_in: float, points: float = 8.0) -> str:
    """``text`` wrapped to a figure ``width_in`` inches wide at ``points`` (a subtitle line that fits)."""
    per_inch = 72.0 / (points * 0.55)  # average glyph width of the default sans-serif
    return "\n".join(textwrap.wrap(text, max(20, int(width_in * per_inch * 0.92))))
