"""The reply's final answer: what it concludes after reasoning, markers, tables and lists.

A reasoning reply names candidates on its way ("Built in 1887 ... so the answer is 1902."); what
it asserts is its conclusion.  :func:`final_answer` takes, in order: the text after the last
``</think>``; inside the last ``<answer>`` / ``<CONCLUSION>`` tag (the HumbleBench reasoning
wrappers); after the last "final answer:" / "answer:" / "so the answer is" / "therefore, the
answer is"; a closing bold line after other lines ("... \\n**Danube**").  Without any of these the
whole reply is the answer.

A reply cut off at the token limit (``finish_reason`` length) is never judged
(:func:`mmrag.judging.failed.unjudged`); one that stops mid-clause without saying so is read like
any other, and its final answer is whatever it finished saying.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mmrag.judging.lexicon import clean, content_stems, sentences

THINK_END = re.compile(r"</think>", re.I)
#: the tags a reasoning model wraps its answer in (HumbleBench's ``<answer>``, ``<CONCLUSION>``)
REASONING_TAGS = (
    re.compile(r"<answer>(.*?)(?:</answer>|$)", re.I | re.S),
    re.compile(r"<conclusion>(.*?)(?:</conclusion>|$)", re.I | re.S),
)
_MARKER = re.compile(
    r"(?:^|(?<=[.!?:\n])|(?<=\s))(?:\**\s*)(?:final answer|short answer|final(?=\s*:)|(?:so |thus |hence |therefore,? )?"
    r"(?:the |my )?(?:final |correct )?answer(?: is|:| -| would be)|so the answer is)\s*[:\-]?\s*\**\s*(.+?)\s*$",
    re.I | re.S,
)
#: a reply that corrects itself ("1953 - no, sorry, that was the second ascent; the first was 1952")
_CORRECTION = re.compile(
    r"(?:\bno,? sorry|\bsorry,? no|\bcorrection:|\bi mean,|\bwait,? (?:no|actually)|\bwait\s*[—–-]|\bactually,? no|"
    r"\bon (?:second|closer) (?:thought|look|inspection)|\b(?:sorry,? )?looking (?:again|closer)|"
    r"\bsorry,? i (?:was wrong|misread))[,;:.]?\s+(.+?)\s*$",
    re.I | re.S,
)
_BOLD_LINE = re.compile(r"\n\s*\*\*([^*\n]{1,120})\*\*[.!]?\s*$")


@dataclass(frozen=True)
class Final:
    """The reply cleaned (``body``: reasoning blocks dropped), its final answer, how it was found."""

    body: str
    answer: str
    method: str  # whole | think | tag | marker | correction | bold line | after table or list


def _reasoning_stripped(text: str) -> tuple[str, str]:
    parts = THINK_END.split(text)
    t, method = parts[-1], "think" if len(parts) > 1 else "whole"
    for rx in REASONING_TAGS:
        found = rx.findall(t)
        if found and found[-1].strip():
            t, method = found[-1], "tag"
    return t.strip(), method


def final_answer(text: str) -> Final:
    raw, method = _reasoning_stripped(text)
    bold = _BOLD_LINE.search("\n" + raw) if "\n" in raw.strip() else None
    body = clean(raw)
    answer = body
    marked = [m for m in _MARKER.finditer(body) if m.group(1).strip(" .*")]
    fixed = [m for m in _CORRECTION.finditer(body) if m.group(1).strip(" .*")]
    if fixed and (not marked or fixed[-1].start() > marked[-1].start()):
        answer, method = fixed[-1].group(1).strip(), "correction"
    elif marked:
        answer, method = marked[-1].group(1).strip(), "marker"
    elif bold:
        answer, method = clean(bold.group(1)), "bold line"
    elif (after := _after_structure(raw)) is not None:
        answer, method = after, "after table or list"
    return Final(body=body, answer=answer.strip(), method=method)


_STRUCTURE = re.compile(r"^\s*(?:\|.*\||[-*•+]\s+\S|\d+[.)]\s+\S)")
#: the words that introduce a conclusion
_THEREFORE = r"so|therefore|thus|hence"
_CONCLUDES = re.compile(rf"(?:^|[\s,;:(])(?:{_THEREFORE}|→|=>|answer)(?=[\s,:;*]|$)", re.I)
_PADDING = re.compile(r"\b(?:hope (?:this|that) helps|let me know|feel free|happy to help|any other questions)\b", re.I)


def _after_structure(raw: str) -> str | None:
    """The concluding paragraph after a table or list ("| Britannic | 1916 | ... so it sank in
    **1916**."): a table lays out candidates, the line after it picks one.  Only a line that
    concludes (so, therefore, →, answer) counts; courtesy lines do not."""
    lines = [x for x in raw.splitlines() if x.strip()]
    last = max((i for i, x in enumerate(lines) if _STRUCTURE.match(x)), default=None)
    if last is None or last == len(lines) - 1:
        return None
    tail = [x for x in lines[last + 1 :] if not _PADDING.search(x)]
    text = clean(" ".join(tail))
    return text if text and (_CONCLUDES.search(text) or len(text.split()) <= 12) else None


_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_RULE_ROW = re.compile(r"^[\s|:-]+$")


def table_answer(text: str, question: str) -> str | None:
    """The rows of a reply that is a bare table which answer the question: the rows whose first
    cell the question names ("| 2022 | €3.9m |" for "... in 2022?", "| Table | glass |" for "what
    is the table made of?"), else its only row.  A table lists candidates; the rows that answer
    are what it asserts."""
    lines = [x for x in text.splitlines() if x.strip()]
    rows = [
        [c.strip(" *") for c in m.group(1).split("|")] for x in lines if (m := _ROW.match(x)) and not _RULE_ROW.match(x)
    ]
    if len(rows) < 2 or len(rows) < len(lines) - 1:
        return None
    body = rows[1:]
    asked = set(content_stems(question)) | set(re.findall(r"\d{2,}", question))
    hits = [r for r in body if r and (set(content_stems(r[0])) | set(re.findall(r"\d{2,}", r[0]))) & asked]
    chosen = hits or (body if len(body) == 1 else [])
    return "; ".join(" ".join(c for c in r if c) for r in chosen) or None


_CONCLUSION = re.compile(
    rf"(?:^|[,;:]\s*|\s)(?:{_THEREFORE}|which means)\b,?\s+(?!far\b|much\b|many\b|that\b)(.+?)\s*$",
    re.I | re.S,
)


_AFTER_QUOTE = re.compile(r"(?<=[.!?][\"\u201d')])\s+")


def concluding_clause(body: str, question: str) -> str | None:
    """The clause after "so" / "therefore" in the last sentence of a reply of several sentences,
    when it speaks of what the question asks ("... the closer relative is the leopard, so the
    parent taxon is Panthera pardus."): what the reply concludes is its answer."""
    parts = [x for x in _AFTER_QUOTE.split(body) for x in sentences(x)]
    if len(parts) < 2:
        return None
    m = _CONCLUSION.search(parts[-1])
    if m is None or not set(content_stems(m.group(1))) & set(content_stems(question)):
        return None
    return m.group(1)
