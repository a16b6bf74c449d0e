"""HumbleBench as a no-context scenario, with its stress settings built as the official code does.

Order of application (official ``DataLoader._prepare_dataset``): shuffle options -> NOTA-only ->
prompt prefix; the noise image replaces the image independently of the text; the letter-only
suffix is appended last, after a newline, like the official ``NOT_REASONING_POST_PROMPT``.

- **noise_image**: one 256x256 grayscale ('L') image of uniform integers 0-255 from
  ``np.random.RandomState(spec.noise_seed).randint`` (default seed 3720, the official global seed),
  written once to ``mmrag_home()/humblebench/noise-<seed>.png`` and used for every question.
  Labels are unchanged (the expected answer is NOTA; metrics read it through the NOTA letter).
- **nota_only**: the correct option is removed, the remaining letters are *not* renumbered, and the
  label becomes the letter of the NOTA option.  Items whose correct option already is NOTA keep all
  options.  NOTA is found by its text ("None of the above" / "None of above") or ``Choice.is_nota``.
- **shuffle_options**: for items with exactly the five options A-E, the old letters are permuted by
  ``random.Random(shuffle_seed + int(question_id)).shuffle(list("ABCDE"))``; new letter i takes the
  text of old option perm[i], and the label follows its option.  ``is_nota`` travels with the text,
  so the NOTA letter after shuffling is known.  Other items are left unchanged (recorded).
- **cautious_prompt** / **forced_grounding_prompt**: a prefix prepended as ``f"{prefix}\\n\\n{question}"``.

Where we differ from the official code, on purpose: with shuffle + nota_only together the official
code would set the label to 'E' (its NOTA test is ``label == 'E'``); we track NOTA by its text, so the
label is the NOTA option wherever shuffling put it.  When the question text already holds the option
lines and no transform changes them, the question is sent verbatim (so "A.text" stays as written);
otherwise options are rebuilt as "X. text" lines, as the official code rebuilds them.
"""

from __future__ import annotations

import functools
import io
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.scenarios.base import ScenarioNotApplicable, finish_prompt, option_lines
from mmrag.scenarios.render import build_messages
from mmrag.scenarios.spec import OFFICIAL_NOISE_SEED, ScenarioSpec
from mmrag.scenarios.templates import get_template
from mmrag.schema import Choice, ImageRef, Prompt, Sample, is_nota_text, sha256_bytes, sha256_file, stable_id
from mmrag.util import atomic_write_bytes, mmrag_home

_OPTION = re.compile(r"^\s*([A-Z])\.\s*(.*?)\s*$")
PREFIX_TEMPLATES = {
    "cautious_prompt": "humblebench-cautious-prefix",
    "forced_grounding_prompt": "humblebench-forced-grounding-prefix",
}
SUFFIX_TEMPLATE = "humblebench-suffix"
LETTERS = list("ABCDE")


@dataclass
class ParsedQuestion:
    stem_lines: list[str]
    options: list[tuple[str, str]]
    trailing_lines: list[str]


def parse_question(question: str) -> ParsedQuestion | None:
    """Split a HumbleBench question into stem, option lines and trailing lines.

    Options start at the first line beginning with "A." and continue while lines read "B.", "C.", ...
    in order; "A. text" and "A.text" both parse.  ``None`` when there is no "A." line.
    """
    lines = question.strip().split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("A.")), None)
    if start is None:
        return None
    options: list[tuple[str, str]] = []
    i = start
    while i < len(lines):
        m = _OPTION.match(lines[i])
        if not m or m.group(1) != chr(ord("A") + len(options)):
            break
        options.append((m.group(1), m.group(2)))
        i += 1
    return ParsedQuestion(lines[:start], options, lines[i:])


@dataclass
class MCQ:
    """The effective question while transforms are applied."""

    stem: str
    options: list[Choice]
    trailing: str = ""
    label: str | None = None
    verbatim: str | None = None  # the original question text, while no transform has changed it
    notes: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        if self.verbatim is not None:
            return self.verbatim
        return "\n".join(p for p in (self.stem, option_lines(self.options), self.trailing) if p)


def mcq_from_sample(sample: Sample) -> MCQ | None:
    """The question as stem + options + trailing lines.

    Options come from the loader's ``choices`` when present (mmrag's HumbleBench loader stores the
    stem in ``question``, the options in ``choices``, the original text in
    ``metadata["raw_question"]`` and any lines after the options in ``metadata["question_suffix"]``);
    a question that still carries its option lines is split so they are not shown twice.  Without
    choices, the options are parsed out of the question text.  ``verbatim`` keeps the original text
    when it lists exactly these options, so the common setting sends what the official code sends.
    """
    raw = sample.metadata.get("raw_question")
    raw = raw if isinstance(raw, str) and raw.strip() else None
    in_question = parse_question(sample.question)
    if in_question is not None and not in_question.options:
        in_question = None
    if sample.choices:
        options = [
            Choice(letter=c.letter, text=c.text.strip(), is_nota=c.is_nota or is_nota_text(c.text))
            for c in sample.choices
        ]
        source: str | None
        listed: list[tuple[str, str]] | None
        if in_question is not None:
            stem = "\n".join(in_question.stem_lines).strip()
            trailing = "\n".join(in_question.trailing_lines).strip()
            source, listed = sample.question, in_question.options
        else:
            stem = sample.question.strip()
            trailing = str(sample.metadata.get("question_suffix") or "").strip()
            parsed_raw = parse_question(raw) if raw else None
            source, listed = raw, (parsed_raw.options if parsed_raw else None)
        same = listed == [(c.letter, c.text) for c in options]
        return MCQ(stem, options, trailing, sample.label, source.strip() if source and same else None)
    if in_question is None:
        return None
    options = [Choice(letter=ltr, text=txt, is_nota=is_nota_text(txt)) for ltr, txt in in_question.options]
    return MCQ(
        "\n".join(in_question.stem_lines).strip(),
        options,
        "\n".join(in_question.trailing_lines).strip(),
        sample.label,
        sample.question.strip(),
    )


def _question_number(sample: Sample) -> tuple[int, str]:
    """The integer question id the official shuffle seeds with, and where it came from."""
    for source, value in (
        ("question_id", sample.question_id),
        ("metadata.question_id", sample.metadata.get("question_id")),
    ):
        try:
            return int(str(value).strip()), source
        except (TypeError, ValueError):
            continue
    return int(stable_id(sample.question_id, length=8), 16), "hash"


def shuffle_options(mcq: MCQ, sample: Sample, shuffle_seed: int) -> None:
    if [c.letter for c in mcq.options] != LETTERS:
        mcq.notes["shuffle_skipped"] = "the item does not have exactly the five options A-E"
        return
    number, source = _question_number(sample)
    perm = LETTERS[:]
    random.Random(shuffle_seed + number).shuffle(perm)
    old = {c.letter: c for c in mcq.options}
    mcq.options = [Choice(letter=new, text=old[o].text, is_nota=old[o].is_nota) for new, o in zip(LETTERS, perm)]
    if mcq.label is not None:
        mcq.label = LETTERS[perm.index(mcq.label)]
    mcq.verbatim = None
    mcq.notes["shuffle"] = {"permutation": "".join(perm), "question_number": number, "seeded_from": source}


def nota_only(mcq: MCQ, sample: Sample) -> None:
    if mcq.label is None:
        raise InputError(f"HumbleBench sample '{sample.id}' has no label; nota_only needs one", field="label")
    gold = next((c for c in mcq.options if c.letter == mcq.label), None)
    if gold is None:
        raise InputError(f"label '{mcq.label}' of sample '{sample.id}' names no option", field="label")
    if gold.is_nota:
        mcq.notes["nota_only"] = "kept: the answer already is NOTA"
        return
    nota = next((c for c in mcq.options if c.is_nota), None)
    if nota is None:
        raise ScenarioNotApplicable(sample.id, "nota_only", "the item has no 'None of the above' option")
    mcq.options = [c for c in mcq.options if c.letter != gold.letter]
    mcq.label = nota.letter
    mcq.verbatim = None
    mcq.notes["nota_only"] = f"removed option {gold.letter}"


@functools.lru_cache(maxsize=8)
def _noise_png(seed: int) -> bytes:
    from PIL import Image

    pixels = np.random.RandomState(seed).randint(0, 256, (256, 256), dtype=np.uint8)
    img = Image.fromarray(pixels)  # 2-D uint8 -> mode 'L'
    assert img.mode == "L"
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


_written: set[tuple[str, str]] = set()


def noise_image(seed: int = OFFICIAL_NOISE_SEED, home: Path | None = None) -> ImageRef:
    """The one noise image for ``seed``; written atomically on first use, rewritten if the file on
    disk differs (so a corrupted cache cannot reach a model)."""
    path = Path(home or mmrag_home()) / "humblebench" / f"noise-{seed}.png"
    data = _noise_png(seed)
    digest = sha256_bytes(data)
    key = (str(path), digest)
    if key not in _written:
        if not path.is_file() or sha256_file(path) != digest:
            atomic_write_bytes(path, data)
        _written.add(key)
    return ImageRef(path=str(path), sha256=digest)


def applicable(sample: Sample, spec: ScenarioSpec) -> str | None:
    if mcq_from_sample(sample) is None:
        return "no options: neither sample.choices nor option lines in the question"
    return None


def build_humblebench_prompt(sample: Sample, spec: ScenarioSpec, miner: Any = None, store: Any = None) -> Prompt:
    mcq = mcq_from_sample(sample)
    if mcq is None:
        raise ScenarioNotApplicable(sample.id, spec.id, applicable(sample, spec) or "no options")
    if "shuffle_options" in spec.stress:
        shuffle_options(mcq, sample, spec.shuffle_seed)
    if "nota_only" in spec.stress:
        try:
            nota_only(mcq, sample)
        except ScenarioNotApplicable as exc:
            raise ScenarioNotApplicable(sample.id, spec.id, exc.reason) from None
    templates = []
    question = mcq.text()
    for stress, tpl_id in PREFIX_TEMPLATES.items():
        if stress in spec.stress:
            prefix = get_template(tpl_id)
            templates.append(prefix)
            question = f"{prefix.fill('text')}\n\n{question}"
    suffix = get_template(spec.template or SUFFIX_TEMPLATE)
    templates.append(suffix)
    body = suffix.fill("question", question=question) + "\n" + suffix.fill("text")
    images = [noise_image(spec.noise_seed)] if "noise_image" in spec.stress else list(sample.images)
    messages = build_messages(system=suffix.fill("system") or None, query_images=images, body=body)
    nota = next((c.letter for c in mcq.options if c.is_nota), None)
    meta = {"stress": list(spec.stress), "nota_letter": nota, "original_label": sample.label, **mcq.notes}
    return finish_prompt(sample, spec, messages, templates, choices=mcq.options, label=mcq.label, metadata=meta)
