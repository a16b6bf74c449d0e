"""The streaming core of a run: compose -> model -> judge -> store, as asyncio tasks joined by
bounded queues.

Why a pipeline and not batches: a batch waits for its slowest reply (model latency is lognormal:
reply lengths vary), then for judging and an fsync, before the next batch is sent, so a server
that could hold 32 requests saw about 2 on average.  Here every stage runs at once:

- one **producer** composes cells in plan order and puts each (cell, model) on that model's
  queue; the bounded queue is the back-pressure, so composition runs just ahead of the models;
- one **lane per model** keeps up to ``window`` prompts in flight, each model with its own window
  (several models of a run are served at the same time).  A lane hands the model
  ``prompts_per_call`` prompts per call: 1 for backends that run their own concurrency (a remote
  server: a finished reply frees its slot at once), more for backends that compute a batch in one
  pass (local models declare it; otherwise the run's ``batch_size``).  Models are called only
  through the VLM protocol (``agenerate``, or ``generate`` in a thread when there is none);
- **judge workers** take whatever replies are waiting (up to 256 at once) and judge them through
  the judge's batch entry point (:func:`mmrag.judging.judge_many`), grouped by benchmark kind.
  A batch runs in a worker thread, so neither an LLM judge's blocking calls nor a backlog of
  rule judging stall the lanes (four workers when the judge calls a model, their time is waiting;
  one for rule judging, two would only contend for the same cores); a batch of at most
  ``INLINE_JUDGE`` replies to the rule judge (a millisecond or two: what a server's replies
  trickling in make) is judged on the event loop itself, without a thread hop.  A failed request
  or an incomplete reply (``finish_reason`` length or content_filter) is not shown to the judge:
  it gets an ``unparseable`` verdict that says why;
- one **writer** adds records to the :class:`~mmrag.runs.store.RunStore` and commits a segment
  every ``flush_every`` records or ``flush_seconds`` seconds, whichever comes first (the Parquet
  write and fsync in a worker thread: they release the GIL); progress is advanced only for
  committed records.  With ``keep_records`` it also keeps the records it stored (up to
  ``KEEP_LIMIT``), so the engine summarises a fresh run from them instead of reading it back.

Failures are counted as they are stored — a failed request and a failed judge call alike (an LLM
judge that cannot be reached grades nothing: the cell is ``judge_failed``); once more than the
run's error budget have failed, the producer stops and the lanes drop what is queued (requests
already sent finish and are stored).  A cell whose judge call failed is judged again on resume from
its stored reply (``rejudge``), without a model call.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, cast

from mmrag.errors import InputError
from mmrag.judging import judge_many
from mmrag.judging.failed import unjudged
from mmrag.runs.records import RunRecord, cell_error, record_key
from mmrag.schema import Response, Verdict

#: cells the producer composes before letting the lanes run: a local model (the context reader,
#: a transformers VLM) then gets batches of up to this many prompts instead of a handful, and
#: embeds them in one pass (MiniLM costs several times more CPU per text in batches of five)
YIELD_EVERY = 32
#: rule-judged batches this small are judged on the event loop (a millisecond or two; a thread hop
#: would cost as much); larger ones in a worker thread, so a backlog never stalls the lanes
INLINE_JUDGE = 4
#: records the writer keeps for the summary at most (beyond, the engine reads the run back)
KEEP_LIMIT = 250_000


@dataclass
class Lane:
    label: str
    vlm: Any
    settings: Any
    window: int
    per_call: int
    queue: asyncio.Queue = field(default=None)  # type: ignore[arg-type]  # set by the pipeline before use
    calls: int = 0
    in_flight: int = 0
    busy_s: float = 0.0  # integral of in-flight prompts over time


@dataclass
class Item:
    plan: Any
    sample: Any
    spec: Any
    prompt: Any
    ord: int
    compose_s: float
    key: str
    scenario_id: str


@dataclass
class Stats:
    new: int = 0
    failed: int = 0
    model_calls: int = 0
    not_applicable: dict[str, int] = field(default_factory=dict)
    aborted: str | None = None
    last_error: str = ""
    #: seconds spent per stage (composing, judging, writing segments; summed over workers)
    stages: dict[str, float] = field(default_factory=lambda: {"compose_s": 0.0, "judge_s": 0.0, "write_s": 0.0})
    wall_s: float = 0.0


def engine_verdict(r: Response) -> Verdict | None:
    """The verdict of a reply that must not be judged (None: the judge decides); the policy is the
    judge's own (:func:`mmrag.judging.failed.unjudged`), so a run and ``mmrag judge`` agree."""
    return unjudged(r, "engine")


async def call_model(vlm: Any, prompts: list, settings: Any) -> list[Response]:
    agen = getattr(vlm, "agenerate", None)
    if agen is not None:
        return list(await agen(prompts, settings))
    return list(await asyncio.to_thread(vlm.generate, prompts, settings))


class Pipeline:
    def __init__(
        self,
        cells: list[tuple[Any, list[tuple[Any, Any, list[tuple[Lane, int, str]]]]]],
        lanes: list[Lane],
        judges: dict[str, Any],
        store: Any,
        *,
        flush_every: int,
        flush_seconds: float,
        max_failed: float,
        progress: Any = None,
        task: Any = None,
        judge_in_thread: bool = False,
        rejudge: dict[str, Response] | None = None,
        keep_records: bool = False,
    ) -> None:
        self.cells, self.lanes, self.judges, self.store = cells, lanes, judges, store
        #: cells whose stored reply is judged again (their judge call failed): no model call
        self.rejudge = rejudge or {}
        self.flush_every, self.flush_seconds, self.max_failed = flush_every, flush_seconds, max_failed
        self.progress, self.task = progress, task
        self.judge_in_thread = judge_in_thread
        self.n_judges = 4 if judge_in_thread else 1
        #: (ordinal, record) of every record stored, when kept (None: not kept, or over KEEP_LIMIT)
        self.stored: list[tuple[int, RunRecord]] | None = [] if keep_records else None
        self.stats = Stats()
        self.abort = asyncio.Event()
        self.fatal: BaseException | None = None
        self.judge_q: asyncio.Queue = asyncio.Queue(maxsize=max(64, sum(l.window for l in lanes)))
        self.store_q: asyncio.Queue = asyncio.Queue(maxsize=max(256, 2 * flush_every))
        for lane in lanes:
            lane.queue = asyncio.Queue(maxsize=2 * lane.window + lane.per_call)

    async def run(self) -> Stats:
        started = time.monotonic()
        workers = [asyncio.create_task(self.serve(lane)) for lane in self.lanes]
        judges = [asyncio.create_task(self.judge_worker()) for _ in range(self.n_judges)]
        writer = asyncio.create_task(self.writer())
        producer = asyncio.create_task(self.produce())
        try:
            await producer
            await asyncio.gather(*workers)
            for _ in judges:
                await self.judge_q.put(None)
            await asyncio.gather(*judges)
            await self.store_q.put(None)
            await writer
        except BaseException:
            for t in (producer, *workers, *judges, writer):
                t.cancel()
            raise
        if self.fatal is not None:
            raise self.fatal
        self.stats.wall_s = time.monotonic() - started
        for lane in self.lanes:
            self.stats.stages[f"mean_in_flight[{lane.label}]"] = lane.busy_s / max(self.stats.wall_s, 1e-9)
        return self.stats

    # -- stages ----------------------------------------------------------------------------------
    def _stop(self, exc: BaseException) -> None:
        if self.fatal is None:
            self.fatal = exc
        self.abort.set()

    async def produce(self) -> None:
        spec_ids = {id(sp): sp.id for plan, _ in self.cells for sp in plan.specs}
        try:
            for plan, todo in self.cells:
                if self.abort.is_set():
                    break
                await asyncio.to_thread(plan.prefetch, [(sm, sp) for sm, sp, _ in todo])
                for i, (sample, spec, lanes) in enumerate(todo):
                    if self.abort.is_set():
                        break
                    t0 = time.perf_counter()
                    prompt = plan.compose(sample, spec)
                    dt = time.perf_counter() - t0
                    self.stats.stages["compose_s"] += dt
                    if prompt is None:
                        self.stats.not_applicable[spec.id] = self.stats.not_applicable.get(spec.id, 0) + len(lanes)
                        if self.progress is not None and self.task is not None:
                            self.progress.advance(self.task, len(lanes))
                        continue
                    sid = spec_ids[id(spec)]
                    for lane, ord_, key in lanes:
                        item = Item(plan, sample, spec, prompt, ord_, dt, key, sid)
                        stored = self.rejudge.get(key)
                        if stored is not None:  # the reply is on disk: only its judging failed
                            stored = stored.model_copy(update={"prompt_id": prompt.id})
                            await self.judge_q.put((lane, item, stored, 0.0))
                        else:
                            await lane.queue.put(item)
                    if i % YIELD_EVERY == YIELD_EVERY - 1:
                        await asyncio.sleep(0)
        except BaseException as exc:
            self._stop(exc)
        finally:
            for lane in self.lanes:
                await lane.queue.put(None)

    async def serve(self, lane: Lane) -> None:
        slots = asyncio.Semaphore(lane.window)
        tasks: set[asyncio.Task] = set()
        ended = False
        while not ended:
            await slots.acquire()
            item = await lane.queue.get()
            if item is None:
                slots.release()
                break
            batch = [item]
            while len(batch) < lane.per_call and not slots.locked():
                try:
                    nxt = lane.queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if nxt is None:
                    ended = True
                    break
                await slots.acquire()
                batch.append(nxt)
            if self.abort.is_set():
                for _ in batch:
                    slots.release()
                continue
            t = asyncio.create_task(self.call(lane, batch, slots))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)

    async def call(self, lane: Lane, batch: list[Item], slots: asyncio.Semaphore) -> None:
        t0 = time.monotonic()
        lane.in_flight += len(batch)
        try:
            responses = await call_model(lane.vlm, [it.prompt for it in batch], lane.settings)
            if len(responses) != len(batch):
                raise RuntimeError(f"{lane.label} returned {len(responses)} responses for {len(batch)} prompts")
        except InputError as exc:
            self._stop(exc)
            responses = []
        except Exception as exc:  # a backend bug must not lose the run: the cells fail, and count
            detail = f"{type(exc).__name__}: {exc}"[:500]
            responses = [
                Response(prompt_id=it.prompt.id, model=lane.vlm.fingerprint, error="other", error_detail=detail)
                for it in batch
            ]
        finally:
            dt = time.monotonic() - t0
            lane.in_flight -= len(batch)
            lane.busy_s += dt * len(batch)
            lane.calls += 1
            for _ in batch:
                slots.release()
        gen_s = dt / max(len(batch), 1)
        for it, r in zip(batch, responses):
            await self.judge_q.put((lane, it, r, gen_s))

    async def judge_worker(self) -> None:
        while True:
            first = await self.judge_q.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < 256:
                try:
                    nxt = self.judge_q.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if nxt is None:
                    self.judge_q.put_nowait(None)  # leave the sentinel for this worker's next get
                    break
                batch.append(nxt)
            t0 = time.perf_counter()
            try:
                recs = await self._judge(batch)
            except BaseException as exc:
                self._stop(exc)
                return
            self.stats.stages["judge_s"] += time.perf_counter() - t0
            for rec in recs:
                await self.store_q.put(rec)

    async def _verdicts(self, judge: Any, items: list) -> list[Verdict]:
        """One verdict per item, through the judge's batch entry point (a small batch of rule
        judging on the event loop, anything else in a worker thread: see the module docstring)."""
        if self.judge_in_thread or len(items) > INLINE_JUDGE:
            out = list(await asyncio.to_thread(judge_many, judge, items))
        else:
            out = list(judge_many(judge, items))
        if len(out) != len(items):  # a verdict matched to the wrong reply would be silently wrong
            raise RuntimeError(f"the judge returned {len(out)} verdicts for {len(items)} replies")
        return out

    async def _judge(self, batch: list) -> list[tuple[RunRecord, int]]:
        verdicts: list[Verdict | None] = [engine_verdict(r) for _, _, r, _ in batch]
        by_kind: dict[str, list[int]] = {}
        for i, (_, it, _r, _) in enumerate(batch):
            if verdicts[i] is None:
                by_kind.setdefault(it.plan.kind, []).append(i)
        for kind, idx in by_kind.items():
            items = [(batch[i][1].sample, batch[i][1].prompt, batch[i][2]) for i in idx]
            for i, v in zip(idx, await self._verdicts(self.judges[kind], items)):
                verdicts[i] = v
        out = []
        dumps: dict[int, dict] = {}
        for (lane, it, r, gen_s), v in zip(batch, cast("list[Verdict]", verdicts)):  # every None was judged above
            sp = it.spec
            if id(sp) not in dumps:
                dumps[id(sp)] = sp.model_dump(mode="json")
            out.append(
                (
                    RunRecord.model_construct(  # trusted parts, each validated where it was made
                        key=it.key,
                        benchmark=it.plan.ref.name,
                        benchmark_kind=it.plan.kind,
                        scenario_id=it.scenario_id,
                        scenario=dumps[id(sp)],
                        model=lane.label,
                        model_fingerprint=lane.vlm.fingerprint,
                        sample=it.sample,
                        prompt=it.prompt,
                        response=r,
                        verdict=v,
                        mining=dict(it.prompt.metadata.get("mining", {})),
                        timings={"compose_s": it.compose_s, "generate_s": gen_s},
                    ),
                    it.ord,
                )
            )
        return out

    async def writer(self) -> None:
        last = time.monotonic()
        done = False
        while not done:
            wait = max(0.0, self.flush_seconds - (time.monotonic() - last))
            try:
                got = (
                    await asyncio.wait_for(self.store_q.get(), timeout=wait)
                    if self.store.pending
                    else await self.store_q.get()
                )
            except asyncio.TimeoutError:
                got = False
            if got is None:
                done = True
            elif got:
                rec, ord_ = got
                self.store.add(rec, ord=ord_)
                if self.stored is not None:
                    self.stored.append((ord_, rec))
                    if len(self.stored) > KEEP_LIMIT:
                        self.stored = None
                if not rec.response.cached and rec.key not in self.rejudge:
                    self.stats.model_calls += 1
                err = cell_error(rec.response, rec.verdict)
                if err is not None:
                    self.stats.failed += 1
                    detail = (
                        rec.response.error_detail
                        if rec.response.error is not None
                        else str(rec.verdict.details.get("judge_error_detail") or "")
                    )
                    self.stats.last_error = f"{err}: {detail[:120]}"
                    if self.stats.failed > self.max_failed and not self.abort.is_set():
                        self.stats.aborted = (
                            f"stopped after {self.stats.failed} failed cells "
                            f"(error budget {int(self.max_failed)}); last: {self.stats.last_error}"
                        )
                        self.abort.set()
                else:
                    self.stats.new += 1
            if self.store.pending and (
                done or self.store.pending >= self.flush_every or time.monotonic() - last >= self.flush_seconds
            ):
                objs, rows = self.store.take()
                t0 = time.perf_counter()
                try:
                    await asyncio.to_thread(self.store.write_batch, objs, rows)
                    self.stats.stages["write_s"] += time.perf_counter() - t0
                except BaseException as exc:
                    self._stop(exc)
                    return
                if self.progress is not None and self.task is not None:
                    self.progress.advance(self.task, len(rows))
                last = time.monotonic()
            elif not self.store.pending:
                last = time.monotonic()


def plan_cells(
    plans: list, lanes: list[Lane], store: Any, retry_failed: bool, planned: dict | None = None
) -> tuple[list, dict[str, int], int, int]:
    """Which (sample, spec) cells each model still needs, in plan order, with their ordinals.

    Returns (cells per plan, not-applicable counts, cells skipped as done, total applicable cells);
    ``planned``, when given, gets the applicable cells per (benchmark, scenario id, model label)."""
    out: list = []
    not_applicable: dict[str, int] = {}
    skipped, total, ord_ = 0, 0, 0
    for plan in plans:
        todo = []
        for spec in plan.specs:
            sid = spec.id
            for sample in plan.samples:
                fits = plan.fits(sample, spec)
                need = []
                for lane in lanes:
                    o, ord_ = ord_, ord_ + 1
                    if not fits:
                        continue
                    total += 1
                    if planned is not None:
                        g = (plan.ref.name, sid, lane.label)
                        planned[g] = planned.get(g, 0) + 1
                    key = record_key(sample.id, sid, lane.vlm.fingerprint)
                    if key in store.done or (key in store.failed and not retry_failed):
                        skipped += 1
                    else:
                        need.append((lane, o, key))
                if not fits:
                    not_applicable[spec.id] = not_applicable.get(spec.id, 0) + len(lanes)
                elif need:
                    todo.append((sample, spec, need))
        out.append((plan, todo))
    return out, not_applicable, skipped, total
