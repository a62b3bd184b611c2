"""The test suite's embedder cache, passed explicitly to every ``Container`` a test builds.

A container owns a new ``EmbedderCache`` unless it is given one (streams/bootstrap.py); the tests
build dozens of containers in one process, so they share this one and load each model once.
"""

from __future__ import annotations

from streams.bootstrap import Container, EmbedderCache
from streams.settings import Settings

EMBEDDERS = EmbedderCache()


def shared_container(settings: Settings | None = None, **kw) -> Container:
    """A container over ``settings`` (the environment's when omitted) sharing the suite's embedders."""
    return Container(settings or Settings(), embedders=EMBEDDERS, **kw)


def use_embedder():
    """USE multilingual v3 loaded in this process (the learnt extractor's and intent classifier's)."""
    return shared_container().in_process_embedder("use", "use-multilingual-v3")
