"""Connecting to Ray: the import guard, ``ray.init`` and what the cluster offers.

Why a module of its own: Ray is an optional extra (``pip install 'mmrag[ray]'``) and a heavy
import, so nothing in mmrag imports it unless ``--engine ray`` (or this package's API) asks.
:func:`require_ray` turns a missing extra into one clear :class:`~mmrag.errors.InputError`;
:func:`connect` starts a local cluster when no address is given, so a laptop user can try the Ray
path with no cluster at all, and joins ``ADDR`` (``ray start --head`` prints it) otherwise.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from typing import Any

from mmrag.errors import InputError

ENGINES = ("local", "ray")


def require_ray() -> Any:
    """The ``ray`` module, or an InputError telling how to install the extra."""
    try:
        import ray
        import ray.data  # noqa: F401 - the index build needs Ray Data, part of the same extra
    except ImportError:
        raise InputError("--engine ray needs the Ray extra: pip install 'mmrag[ray]'", field="--engine") from None
    return ray


def check_engine(engine: str, address: str | None = None, replicas: int | None = None) -> None:
    """Validate ``--engine/--address/--replicas`` before anything runs."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}' (local | ray)", field="--engine")
    if engine == "local" and (address or replicas):
        flag = "--address" if address else "--replicas"
        raise InputError(f"{flag} applies to --engine ray only", field=flag)
    if replicas is not None and replicas < 1:
        raise InputError("--replicas must be at least 1", field="--replicas")


#: seconds ``--address`` may take to answer before the command fails (``MMRAG_RAY_CONNECT_TIMEOUT``)
DEFAULT_CONNECT_TIMEOUT = 30.0


def connect_timeout() -> float:
    raw = os.environ.get("MMRAG_RAY_CONNECT_TIMEOUT")
    try:
        value = float(raw) if raw else DEFAULT_CONNECT_TIMEOUT
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InputError(f"MMRAG_RAY_CONNECT_TIMEOUT must be a number of seconds > 0, got {raw!r}")
    return value


def connect(address: str | None = None, timeout: float | None = None) -> Any:
    """``ray.init`` once per process: join ``address`` ("HOST:PORT" or "auto"), or start a local
    cluster when it is None.  Worker output is not echoed to the driver (a failing task still
    raises here, with its traceback).

    Joining is bounded by ``timeout`` seconds (:func:`connect_timeout`, default 30): ``ray.init``
    itself retries an unreachable address for ever, printing only its own warnings, so the
    address is first probed over TCP, then ``ray.init`` runs in a helper thread the driver stops
    waiting for.  Either way an unreachable cluster is one InputError naming ``--address``."""
    import importlib.util

    if "ray" in sys.modules or importlib.util.find_spec("ray") is None:
        ray = require_ray()  # imported already (nothing to save), or the missing extra's error
        if ray.is_initialized():
            return ray
    limit = connect_timeout() if timeout is None else timeout
    deadline = time.monotonic() + limit
    if address is not None:
        _probe(address, deadline, limit)  # before importing Ray (seconds): a dead address fails fast
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False, "configure_logging": True}
    if address is None:
        kwargs["include_dashboard"] = False
        ray.init(**kwargs)
        _quiet_ray_data()
        return ray
    _init_within(ray, address, kwargs, deadline, limit)
    _quiet_ray_data()
    return ray


def _unreachable(address: str, limit: float, why: str) -> InputError:
    return InputError(
        f"cannot reach a Ray cluster at '{address}' within {limit:g} s ({why}); start one with "
        "`ray start --head`, check --address, or give it longer (MMRAG_RAY_CONNECT_TIMEOUT)",
        field="--address",
    )


def _probe(address: str, deadline: float, limit: float) -> None:
    """Wait (until ``deadline``) for ``HOST:PORT`` to accept a TCP connection."""
    if address == "auto" or "://" in address:
        return  # found by Ray itself (a local head's file, a Ray Client URL)
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"'{address}' is not HOST:PORT (nor 'auto')", field="--address")
    why = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _unreachable(address, limit, why)
        try:
            with socket.create_connection((host, int(port)), timeout=min(2.0, left)):
                return
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


class _DropThreadWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "not the main thread" not in record.getMessage()


def _init_within(ray: Any, address: str, kwargs: dict[str, Any], deadline: float, limit: float) -> None:
    """``ray.init(address)`` in a daemon thread, waited for until ``deadline``: a port that
    accepts connections but is no Ray head would otherwise hang the command."""
    box: dict[str, BaseException] = {}

    def init() -> None:
        try:
            ray.init(address=address, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the driver thread
            box["error"] = exc

    quiet = _DropThreadWarning()
    loggers = [logging.getLogger(n) for n in ("ray", "ray._private.worker")]
    for lg in loggers:
        lg.addFilter(quiet)
    try:
        t = threading.Thread(target=init, name="mmrag-ray-connect", daemon=True)
        t.start()
        t.join(max(1.0, deadline - time.monotonic()))
    finally:
        for lg in loggers:
            lg.removeFilter(quiet)
    if t.is_alive():
        raise _unreachable(address, limit, "it accepts connections but no Ray head answered")
    exc = box.get("error")
    if isinstance(exc, ConnectionError):
        raise InputError(
            f"cannot reach a Ray cluster at '{address}' ({str(exc).splitlines()[0][:160]}); "
            "start one with `ray start --head`",
            field="--address",
        ) from None
    if exc is not None:
        raise exc


def _quiet_ray_data() -> None:
    """Ray Data draws its own progress bars and prints its plan; mmrag draws one bar of its own."""
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    for name in ("ray.data", "ray.data._internal.execution.streaming_executor"):
        logging.getLogger(name).setLevel(logging.WARNING)


def cluster_gpus() -> int:
    """Whole GPUs the connected cluster offers (0 on a CPU cluster)."""
    import ray

    return int(ray.cluster_resources().get("GPU", 0))


def shutdown() -> None:
    """Disconnect this driver (a local cluster started by :func:`connect` stops with it)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
