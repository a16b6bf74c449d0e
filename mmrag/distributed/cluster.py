"""Connecting to Ray: the import guard, ``ray.init`` and what the cluster offers.

Why a module of its own: Ray is an optional extra (``pip install 'mmrag[ray]'``) and a heavy
import, so nothing in mmrag imports it unless ``--engine ray`` (or this package's API) asks.
:func:`require_ray` turns a missing extra into one clear :class:`~mmrag.errors.InputError`;
:func:`connect` starts a local cluster when no address is given, so a laptop user can try the Ray
path with no cluster at all, and joins ``ADDR`` (``ray start --head`` prints it) otherwise.
"""

from __future__ import annotations

import logging
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


def connect(address: str | None = None) -> Any:
    """``ray.init`` once per process: join ``address`` ("HOST:PORT" or "auto"), or start a local
    cluster when it is None.  Worker output is not echoed to the driver (a failing task still
    raises here, with its traceback)."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False,
                              "configure_logging": True}
    if address is None:
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=address, **kwargs)
    except ConnectionError as exc:
        raise InputError(f"cannot reach a Ray cluster at '{address}' ({str(exc).splitlines()[0][:160]}); "
                         "start one with `ray start --head`", field="--address") from None
    _quiet_ray_data()
    return ray


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
