"""The built-in demo world: a deterministic, seeded fictional world with a knowledge base.

``ensure_world(seed)`` returns the folder (generated once into ``mmrag_home()/demo``); the
``demo``, ``demo-humblebench`` and ``demo-knowhal`` benchmarks read it through the same loaders as
real data.  See docs/demo.md for what it contains and why.
"""

from mmrag.benchmarks.demo.world import GENERATOR_VERSION, ensure_world, generate_world, world_dir

__all__ = ["GENERATOR_VERSION", "ensure_world", "generate_world", "world_dir"]
