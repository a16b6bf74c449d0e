"""RunStore: a run directory's results as compact columnar rows plus content-addressed objects.

Layout (all Parquet, see :mod:`mmrag.runs.segments` for how segments are committed)::

    RUN/records/   one row per attempt at a cell: keys, status (ok | failed | judge_failed), the reply text, error
                   class, finish reason, usage, timings, the verdict, refs to sample and prompt
    RUN/objects/   each distinct sample, prompt and scenario once (``ref`` = content hash, JSON),
                   prompts with the per-prompt columns of the frame precomputed
    RUN/verdicts/  verdict rows written by ``mmrag score`` (generation 1, 2, ...): later ones win,
                   earlier ones and the records stay as they were
    RUN/lock       held (``fcntl.flock``) by the one process writing the directory

Why: a record row is ~100 bytes because each sample and prompt is stored once in ``objects/`` (a
self-contained record is 4.3 KB), and the prompt is written once however many models answer it.  Opening a run to resume reads two columns
(key, status) instead of every record.  A cell whose latest row is ``failed`` is not finished:
resume sends it again.  Rows are appended as they complete, durably (the engine flushes every N
records or T seconds), and nothing on disk is ever rewritten.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc

from mmrag.errors import InputError
from mmrag.runs.records import RunRecord, judge_error
from mmrag.runs.segments import commit_table, compact, drop_torn, live_segments, next_seq, read_table
from mmrag.schema import canonical_json

RECORDS, OBJECTS, VERDICTS = "records", "objects", "verdicts"
#: the status of a cell whose reply came back but whose judge call failed (``failed``: the request)
JUDGE_FAILED = "judge_failed"
STORE_FORMAT = "mmrag-columnar-1"

#: frame columns derived from the sample alone / the scenario alone: stored once, on its object row
SAMPLE_FACETS: tuple[str, ...] = (
    "sample_id",
    "question_id",
    "question",
    "type",
    "dimension",
    "domain",
    "polarity",
    "pair_id",
)
SCENARIO_FACETS: tuple[str, ...] = ("scenario", "kind", "n_distractors", "negative_modality", "strictness", "stress")
#: frame columns derived from the prompt with its sample and scenario: small, kept on each record row
#: (a join against half a million prompts would cost more than the bytes)
ROW_FACETS: tuple[str, ...] = (
    "positive_modality",
    "source",
    "label",
    "nota_letter",
    "n_contexts",
    "n_gold",
    "n_negative",
    "prompt_id",
    "template_id",
)
PROMPT_FACETS = SAMPLE_FACETS + SCENARIO_FACETS + ROW_FACETS
_INT_FACETS = ("n_distractors", "n_contexts", "n_gold", "n_negative")

_S, _F, _I, _B = pa.string(), pa.float64(), pa.int64(), pa.bool_()


def _facet_type(f: str) -> pa.DataType:
    return pa.int32() if f in _INT_FACETS else _S


VERDICT_FIELDS = [
    ("outcome", _S),
    ("extracted", _S),
    ("judge_id", _S),
    ("reason", _S),
    ("verdict_score", _F),
    ("score", _F),
    ("label_is_nota", _B),
    ("chose_nota", _B),
    ("details", _S),
    # the evidence a decided verdict names (mmrag.schema.Evidence as JSON; null: none)
    ("evidence", _S),
]
#: refs are the first 64 bits of the sha256 of the object's canonical JSON (an int64 joins and
#: decodes far faster than a hex string; a collision among 10^7 objects has odds of about 3e-6)
RECORD_SCHEMA = pa.schema(
    [
        ("key", _S),
        ("ord", _I),
        ("attempt", pa.int32()),
        ("status", _S),
        ("benchmark", _S),
        ("benchmark_kind", _S),
        ("scenario_id", _S),
        ("model", _S),
        ("model_fingerprint", _S),
        ("sample_ref", _I),
        ("prompt_ref", _I),
        ("scenario_ref", _I),
        *[(f, _facet_type(f)) for f in ROW_FACETS],
        ("response", _S),
        ("response_model", _S),
        ("error", _S),
        ("error_detail", _S),
        ("finish_reason", _S),
        ("latency_s", _F),
        ("cached", _B),
        ("prompt_tokens", _I),
        ("completion_tokens", _I),
        ("cost_usd", _F),
        *VERDICT_FIELDS,
        ("mining", _S),
        ("compose_s", _F),
        ("generate_s", _F),
        # the question text on the raw row too, so the records table reads on its own (DuckDB, Arrow)
        ("question", _S),
    ]
)
OBJECT_SCHEMA = pa.schema(
    [("ref", _I), ("obj", _S), ("json", _S), *[(f, _facet_type(f)) for f in SAMPLE_FACETS + SCENARIO_FACETS]]
)
VERDICT_SCHEMA = pa.schema([("key", _S), ("generation", pa.int32()), *VERDICT_FIELDS])


def is_columnar(run_dir: str | Path) -> bool:
    return (Path(run_dir) / RECORDS).is_dir() or (Path(run_dir) / OBJECTS).is_dir()


def _facet(v: Any) -> Any:
    """Metadata columns are strings in the store (a non-string value is kept as its JSON)."""
    return v if v is None or isinstance(v, str) else canonical_json(v)


def verdict_columns(rec: RunRecord, row: dict[str, Any]) -> dict[str, Any]:
    """The verdict's columns; ``row`` supplies score / label_is_nota / chose_nota (see frame)."""
    v = rec.verdict
    return {
        "outcome": v.outcome,
        "extracted": v.extracted,
        "judge_id": v.judge_id,
        "reason": v.reason,
        "verdict_score": v.score,
        "score": row["score"],
        "label_is_nota": row["label_is_nota"],
        "chose_nota": row["chose_nota"],
        "details": canonical_json(v.details) if v.details else None,
        "evidence": canonical_json(v.evidence.model_dump()) if v.evidence is not None else None,
    }


class RunLock:
    """An exclusive, non-blocking ``flock`` on ``RUN/lock``: one writer per run directory.

    The kernel drops the lock when the process dies (even by SIGKILL), so a crashed run never
    leaves a stale lock behind."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "lock"
        self._fh: IO[str] | None = None

    def busy(self, who: str) -> InputError:
        """The error when another process holds the lock (``who``: ``pid N``)."""
        return InputError(
            f"this run directory is in use by another mmrag process ({who}); wait for it to "
            "finish, or resume into it afterwards",
            path=self.path.parent,
        )

    def acquire(self) -> RunLock:
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            who = fh.read().strip() or "another process"
            fh.close()
            raise self.busy(who) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


class RunStore:
    """The writer side.  ``RunStore(dir)`` takes the lock, drops torn segments and reads which cells
    were finished (``done``, as of opening) and which last failed (``failed``, kept current)."""

    #: how many object refs to remember for "already stored" (bounded: memory stays flat however
    #: long the run; a ref forgotten and seen again is stored twice and deduplicated on read)
    SEEN_LIMIT = 1 << 16
    #: more live segments than this in a table when a writer opens it -> compact first
    COMPACT_ON_OPEN = 256

    def __init__(self, run_dir: str | Path, *, lock: bool | RunLock = True) -> None:
        """``lock``: True takes the directory's lock (released by :meth:`close`); a held
        :class:`RunLock` says the caller holds it; False opens without one (tests, tools)."""
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        held = isinstance(lock, RunLock)
        self.lock = RunLock(self.dir).acquire() if lock is True else None
        for t in (RECORDS, OBJECTS, VERDICTS):
            drop_torn(self.dir / t)
            if (held or self.lock is not None) and len(live_segments(self.dir / t)) > self.COMPACT_ON_OPEN:
                compact(self.dir / t)  # a killed long run left many small segments: merge them once
        keys = read_table(self.dir / RECORDS, ["key", "status", "ord", "attempt"], RECORD_SCHEMA)
        #: the ordinal :meth:`append` gives the next record (the engine passes plan ordinals)
        self.next_ord = (pc.max(keys.column("ord")).as_py() + 1) if keys.num_rows else 0
        self._attempts: dict[str, int] = {}
        if keys.num_rows and pc.max(keys.column("attempt")).as_py() > 1:  # some cell was retried
            from mmrag.runs.columnar import last_per_key

            keys = last_per_key(keys)
        ok = pc.equal(keys.column("status"), "ok")
        self.done = set(keys.filter(ok).column("key").to_pylist())
        bad = keys.filter(pc.invert(ok))
        self.failed = set(bad.column("key").to_pylist())
        #: the failed cells whose reply came back but whose judge call failed: resume re-judges the
        #: stored reply instead of asking the model again
        self.judge_failed = set(bad.filter(pc.equal(bad.column("status"), JUDGE_FAILED)).column("key").to_pylist())
        self._attempts = dict(zip(bad.column("key").to_pylist(), bad.column("attempt").to_pylist()))
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._rows: list[dict[str, Any]] = []
        self._objects: list[dict[str, Any]] = []
        self._memo: dict[int, tuple[Any, Any, tuple]] = {}
        self._objmemo: dict[int, tuple[Any, int]] = {}

    # -- writing ---------------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self.done

    def __len__(self) -> int:
        return len(self.done)

    @property
    def pending(self) -> int:
        return len(self._rows)

    def _ref(self, obj: Any, kind: str, columns: dict[str, Any] | None = None) -> int:
        """The content ref of ``obj``; queued for writing (with ``columns``) the first time it is seen."""
        got = self._objmemo.get(id(obj))
        if got is not None and got[0] is obj:
            return got[1]
        data = obj if isinstance(obj, dict) else obj.model_dump(mode="json")
        text = canonical_json(data)
        ref = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big", signed=True)
        if len(self._objmemo) > 4096:
            self._objmemo.clear()
        self._objmemo[id(obj)] = (obj, ref)
        if ref in self._seen:
            self._seen.move_to_end(ref)
            return ref
        self._seen[ref] = None
        if len(self._seen) > self.SEEN_LIMIT:
            self._seen.popitem(last=False)
        self._objects.append({"ref": ref, "obj": kind, "json": text, **(columns or {})})
        return ref

    def _prompt_view(self, rec: RunRecord) -> tuple[int, int, int, dict[str, Any]]:
        """(sample ref, scenario ref, prompt ref, row facets) of a record's prompt; computed once per
        prompt object (the engine shows one prompt object to every model)."""
        from mmrag.runs.frame import prompt_facets

        got = self._memo.get(id(rec.prompt))
        if got is not None and got[0] is rec.prompt and got[1] is rec.sample:
            return got[2]
        facets = {f: (int(v) if f in _INT_FACETS else _facet(v)) for f, v in prompt_facets(rec).items()}
        sample_ref = self._ref(rec.sample, "sample", {f: facets[f] for f in SAMPLE_FACETS})
        scenario_ref = self._ref(rec.scenario, "scenario", {f: facets[f] for f in SCENARIO_FACETS})
        prompt_ref = self._ref(rec.prompt, "prompt")
        view = (sample_ref, scenario_ref, prompt_ref, {f: facets[f] for f in ROW_FACETS})
        if len(self._memo) > 1024:
            self._memo.clear()
        self._memo[id(rec.prompt)] = (rec.prompt, rec.sample, view)
        return view

    def add(self, rec: RunRecord, *, ord: int = 0) -> None:
        """Queue one finished (or failed) cell; it reaches the disk at the next :meth:`flush`."""
        from mmrag.runs.frame import verdict_facets

        sample_ref, scenario_ref, prompt_ref, facets = self._prompt_view(rec)
        row = verdict_facets(rec.verdict, facets["label"], facets["nota_letter"])
        self.next_ord = max(self.next_ord, ord + 1)
        r = rec.response
        judge_failed = r.error is None and judge_error(rec.verdict) is not None
        failed = r.error is not None or judge_failed
        # per-key state only for failures (few): memory stays flat however many records are written
        attempt = self._attempts.get(rec.key, 0) + 1
        if failed:
            self._attempts[rec.key] = attempt
            self.failed.add(rec.key)
        else:
            self.failed.discard(rec.key)
        if judge_failed:
            self.judge_failed.add(rec.key)
        else:
            self.judge_failed.discard(rec.key)
        self._rows.append(
            {
                "key": rec.key,
                "ord": ord,
                "attempt": attempt,
                "status": JUDGE_FAILED if judge_failed else ("failed" if failed else "ok"),
                "benchmark": rec.benchmark,
                "benchmark_kind": rec.benchmark_kind,
                "scenario_id": rec.scenario_id,
                "model": rec.model,
                "model_fingerprint": rec.model_fingerprint,
                "sample_ref": sample_ref,
                "prompt_ref": prompt_ref,
                "scenario_ref": scenario_ref,
                **facets,
                "response": r.text,
                "response_model": r.model,
                "error": r.error,
                "error_detail": r.error_detail or None,
                "finish_reason": r.finish_reason,
                "latency_s": float(r.latency_s),
                "cached": bool(r.cached),
                "prompt_tokens": r.usage.prompt_tokens,
                "completion_tokens": r.usage.completion_tokens,
                "cost_usd": r.usage.cost_usd,
                **verdict_columns(rec, row),
                "mining": canonical_json(rec.mining) if rec.mining else None,
                "compose_s": rec.timings.get("compose_s"),
                "generate_s": rec.timings.get("generate_s"),
                "question": rec.sample.question,
            }
        )

    def append(self, records: Iterable[RunRecord]) -> int:
        """Add and flush (convenience for callers outside the streaming engine)."""
        n = 0
        for rec in records:
            self.add(rec, ord=self.next_ord)
            n += 1
        self.flush()
        return n

    def flush(self) -> int:
        """Commit queued objects, then queued rows (an object is on disk before any row naming it)."""
        rows, objs = self._rows, self._objects
        self._rows, self._objects = [], []
        return self.write_batch(objs, rows)

    def take(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Hand the queued objects and rows to a caller that writes them elsewhere (a worker thread)."""
        rows, objs = self._rows, self._objects
        self._rows, self._objects = [], []
        return objs, rows

    def write_batch(self, objs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> int:
        if objs:
            commit_table(
                self.dir / OBJECTS, pa.Table.from_pylist(objs, schema=OBJECT_SCHEMA), next_seq(self.dir / OBJECTS)
            )
        if rows:
            commit_table(
                self.dir / RECORDS, pa.Table.from_pylist(rows, schema=RECORD_SCHEMA), next_seq(self.dir / RECORDS)
            )
        return len(rows)

    def add_verdicts(self, rows: list[dict[str, Any]]) -> int:
        """Append re-judged verdict rows as one new generation (``mmrag score``)."""
        if not rows:
            return 0
        old = read_table(self.dir / VERDICTS, ["generation"], VERDICT_SCHEMA).column("generation")
        gen = (pc.max(old).as_py() or 0) + 1 if len(old) else 1
        table = pa.Table.from_pylist([{**r, "generation": gen} for r in rows], schema=VERDICT_SCHEMA)
        commit_table(self.dir / VERDICTS, table, next_seq(self.dir / VERDICTS))
        return len(rows)

    def compact(self) -> None:
        """Merge the small per-flush segments into one file per table (end of a run)."""
        for t in (RECORDS, OBJECTS, VERDICTS):
            compact(self.dir / t)

    def close(self) -> None:
        if self._rows or self._objects:
            self.flush()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def stored_responses(run_dir: str | Path, keys: set[str]) -> dict[str, Any]:
    """The latest stored reply of each cell in ``keys`` as a Response (for re-judging a cell whose
    judge call failed without asking the model again)."""
    from mmrag.runs.columnar import last_per_key
    from mmrag.schema import Response, Usage

    if not keys:
        return {}
    cols = [
        "key",
        "response",
        "response_model",
        "finish_reason",
        "latency_s",
        "cached",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "status",
    ]
    t = last_per_key(read_table(Path(run_dir) / RECORDS, cols, RECORD_SCHEMA))
    out = {}
    for row in t.filter(pc.equal(t.column("status"), JUDGE_FAILED)).to_pylist():
        if row["key"] in keys:
            out[row["key"]] = Response(
                prompt_id="",
                text=row["response"] or "",
                model=row["response_model"] or "",
                usage=Usage(
                    prompt_tokens=row["prompt_tokens"] or 0,
                    completion_tokens=row["completion_tokens"] or 0,
                    cost_usd=row["cost_usd"] or 0.0,
                ),
                latency_s=row["latency_s"] or 0.0,
                finish_reason=row["finish_reason"],
                cached=bool(row["cached"]),
            )
    return out


#: the old name (a run's results store); the JSONL store it named is read by :mod:`mmrag.runs.legacy`
ResultStore = RunStore


def write_format_marker(run_dir: Path) -> None:
    from mmrag.util import atomic_write_text

    p = run_dir / "FORMAT"
    if not p.exists():
        atomic_write_text(p, STORE_FORMAT + "\n")
