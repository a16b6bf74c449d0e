"""``mmrag benchmark build-deflection`` and ``mmrag benchmark validate`` in one group."""

from __future__ import annotations

from mmrag.commands.benchmark_build import app
from mmrag.commands.benchmark_validate import register

register(app)

__all__ = ["app"]
