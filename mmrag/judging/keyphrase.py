"""The key phrase of a sentence reference: the default rule's last step, in its own module because
WebQA's category rule and the open-answer pipeline read it too.

A reference of four or more words is a sentence, not a name: a reply gives it when it carries the
words the reference adds to the question (recall >= :data:`KEY_RECALL`; WebQA scores by keyword
recall), reporting verbs left out.  A number inside the key phrase is the answer and must be the
reply's number.
"""

from __future__ import annotations

from functools import lru_cache, partial

from mmrag.judging.base import Match
from mmrag.judging.lexicon import REPORTING, content_stems, negated_at, stems, words

#: share of a sentence reference's key phrase a reply must carry (WebQA scores by keyword recall)
KEY_RECALL = 0.6


def is_sentence(reference: str) -> bool:
    """A reference of four or more words is a sentence to take the key phrase of, not a name."""
    return len(words(reference)) >= 4


@lru_cache(maxsize=16384)
def key_phrase(question: str, reference: str) -> tuple[str, ...]:
    """Stems the reference adds to the question (order kept), reporting verbs left out when
    anything else is left; all its content words when the question holds every one."""
    q = set(stems(question))
    seen = list(dict.fromkeys(s for s in content_stems(reference) if s not in q))
    said = [s for s in seen if s not in REPORTING]
    return tuple(said or seen or dict.fromkeys(content_stems(reference)))


def key_phrase_match(question: str, refs: list[str], reply: str) -> Match | None:
    """The reply against the sentence reference whose key phrase it carries best; None when no
    reference is a sentence."""
    reply_toks = stems(reply)
    best, best_ref = -1.0, ""
    best_key: tuple[str, ...] = ()
    for ref in (r for r in refs if is_sentence(r)):
        key = key_phrase(question, ref)
        if key:
            recall = sum(k in reply_toks for k in key) / len(key)
            if recall > best:
                best, best_ref, best_key = recall, ref, key
    if best < 0:
        return None
    found = partial(Match, kind="key phrase", details={"key_phrase": list(best_key), "key_recall": round(best, 3)})
    key_numbers = {k for k in best_key if k[:1].isdigit()}
    if key_numbers:  # a number in the key phrase is the answer: it must be the reply's number
        q = set(words(question))
        said = {t for t in reply_toks if t[:1].isdigit() and t not in q}
        if key_numbers <= said and len(words(reply)) <= 3:  # "Two." for "a two-bladed rotor"
            return found("gives", " ".join(sorted(key_numbers)), "reply states the reference's number")
        if said and not key_numbers & said:
            return found("contradicts", " ".join(sorted(said)), "reply gives another number than the reference")
        if not key_numbers <= said:
            best = min(best, (len(best_key) - len(key_numbers - said)) / len(best_key) * 0.99)
    if best >= KEY_RECALL:
        idx = [i for i, t in enumerate(reply_toks) if t in best_key]
        if idx and all(negated_at(reply_toks, i) for i in idx):
            return found("contradicts", reply, "reply negates the key phrase", certain=False)
        certain = best >= 0.75 or len(best_key) <= 3
        return found("gives", " ".join(best_key), f"reply carries the key phrase of {best_ref!r}", certain=certain)
    return found("absent", None, "reply carries too little of the key phrase", certain=best == 0)
