"""Adaptive concurrency for remote backends: an AIMD limiter under a hard cap.

A server's capacity is unknown to the client and changes with its load, so a fixed concurrency is
either too timid (idle server) or too greedy (429s, queueing).  :class:`AIMDLimiter` adapts the
number of requests in flight the way TCP adapts its window:

* **slow start** — from ``initial`` the limit grows by one per success (doubling per round trip)
  until the first congestion signal, so a large cap is reached in a few round trips;
* **additive increase** — afterwards it grows by ``increase / limit`` per success (about +1 per
  round trip);
* **multiplicative decrease** — on an overload signal (429, 503, a timeout, a refused or dropped
  connection: the backend decides what it sends as ``"overload"``) the limit is multiplied by
  ``decrease``.  Latency alone does **not** cut the window by default (``latency_factor=None``):
  a VLM's latency varies with the length of its reply (lognormal, sigma about 1), and reading that
  spread as congestion kept a 32-wide window at 2 in flight.  ``latency_factor`` re-enables a
  latency test (an EWMA of recent latencies against their 10th percentile) for servers whose
  replies are uniform; ``perf/run_engine_bench.py`` checks that the default never fires on a
  lognormal server at constant load.  Only one
  decrease per round trip: a signal from a request that was sent *before* the last decrease says
  nothing about the new limit (it belongs to the same burst), so it is ignored;
* **Retry-After** — :meth:`hold` keeps new requests back until the server's stated time has
  passed (requests already waiting for a retry wait on their own);
* never above ``cap`` (the user's hard limit; tests assert the server never sees more) and never
  below ``min_limit``.

The default ``decrease=0.7`` (rather than TCP's 0.5) keeps the sawtooth's average near 85 % of the
server's real limit; it is configurable through the backend options.  The limiter is loop-agnostic
(plain counters plus futures of whichever loop is running), so one model instance can serve
successive ``asyncio.run`` calls.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

Signal = Literal["ok", "overload", "neutral"]


@dataclass
class Ticket:
    """Handed out by :meth:`AIMDLimiter.acquire`; remembers when (and in which epoch) a request began."""

    epoch: int
    started: float = field(default_factory=time.monotonic)


class AIMDLimiter:
    def __init__(
        self,
        cap: int = 64,
        *,
        initial: int | None = None,
        min_limit: int = 1,
        increase: float = 1.0,
        decrease: float = 0.7,
        latency_factor: float | None = None,
        latency_window: int = 200,
        ewma_alpha: float = 0.1,
        adaptive: bool = True,
    ) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be in (0, 1)")
        self.cap = cap
        self.min_limit = max(1, min(min_limit, cap))
        self.adaptive = adaptive
        start = cap if not adaptive else (initial if initial is not None else max(self.min_limit, min(cap, 16)))
        self.limit = float(max(self.min_limit, min(cap, start)))
        self.increase = increase
        self.decrease = decrease
        self.latency_factor = latency_factor
        self.ewma_alpha = ewma_alpha
        self.slow_start = adaptive
        self.in_flight = 0
        self.max_in_flight = 0
        self.epoch = 0
        self.decreases = 0
        self.decreases_by: dict[str, int] = {"overload": 0, "latency": 0}
        self._recent: deque[float] = deque(maxlen=latency_window)
        self._ewma: float | None = None
        self._base: float | None = None
        self._since_base = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.history: list[tuple[float, float]] = []  # (monotonic time, limit) at each change of floor
        self.hold_until = 0.0

    # -- slots -----------------------------------------------------------------------------------
    @property
    def allowed(self) -> int:
        return max(self.min_limit, min(self.cap, math.floor(self.limit)))

    def hold(self, seconds: float) -> None:
        """No new request starts for ``seconds`` (a server's Retry-After)."""
        self.hold_until = max(self.hold_until, time.monotonic() + max(0.0, seconds))

    async def acquire(self) -> Ticket:
        while (wait := self.hold_until - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        while self.in_flight >= self.allowed:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self._wake()  # pass the wake-up we swallowed on to the next waiter
                raise
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return Ticket(epoch=self.epoch)

    def release(self, ticket: Ticket, signal: Signal, latency: float | None = None) -> None:
        """Free the slot and feed the outcome of the request back into the limit."""
        self.in_flight -= 1
        if self.adaptive:
            before = self.allowed
            if signal == "overload":
                self._on_congestion(ticket, "overload")
            elif signal == "ok":
                if latency is not None and self._latency_rising(latency):
                    self._on_congestion(ticket, "latency")
                else:
                    self._grow()
            if self.allowed != before:
                self.history.append((time.monotonic(), self.limit))
        self._wake()

    # -- internals -------------------------------------------------------------------------------
    def _wake(self) -> None:
        free = self.allowed - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_resolve, fut)
                free -= 1

    def _grow(self) -> None:
        if self.slow_start:
            self.limit = min(float(self.cap), self.limit + 1.0)
        else:
            self.limit = min(float(self.cap), self.limit + self.increase / max(self.limit, 1.0))

    def _on_congestion(self, ticket: Ticket, cause: str) -> None:
        if ticket.epoch != self.epoch:
            return  # same burst as a decrease already applied
        self.slow_start = False
        self.limit = max(float(self.min_limit), self.limit * self.decrease)
        self.epoch += 1
        self.decreases += 1
        self.decreases_by[cause] += 1
        self._ewma = None  # the latency average restarts at the new operating point

    def _latency_rising(self, latency: float) -> bool:
        self._recent.append(latency)
        self._ewma = latency if self._ewma is None else (1 - self.ewma_alpha) * self._ewma + self.ewma_alpha * latency
        if self.latency_factor is None or len(self._recent) < 10:
            return False
        self._since_base += 1
        if self._base is None or self._since_base >= 16:  # the percentile, refreshed every 16 samples
            self._base = sorted(self._recent)[len(self._recent) // 10]
            self._since_base = 0
        return self._ewma > self.latency_factor * self._base


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
