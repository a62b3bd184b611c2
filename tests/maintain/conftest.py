import pytest


@pytest.fixture(scope="module")
def db(stack, tmp_path_factory, request):
    """One isolated database per test module (tests use distinct account ids)."""
    from streams.store.db import make_pool
    from tests.harness import Env

    e = Env(tmp_path_factory.mktemp("learn"), name=request.module.__name__.rsplit(".", 1)[-1][:20])
    e.pool = make_pool(e.settings, min_size=1, max_size=4, name=e.tag)
    yield e
    e.pool.close()
    e.close()


@pytest.fixture(scope="session")
def memory_embedder():
    from streams.embedding import build_embedder
    from streams.settings import Settings

    s = Settings()
    return build_embedder(s.memory_embedding_provider, s.memory_embedding_model)
