import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
# Subprocesses (`memoria worker`, `memoria admin serve`, ...) import this checkout's code, not the
# one the shared virtualenv was installed from in editable mode (its console scripts do not put the
# working directory on sys.path).
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


@pytest.fixture(scope="session")
def stack():
    """Kafka and Postgres of the local stack (started if needed, idempotent)."""
    r = subprocess.run([sys.executable, str(REPO / "infra" / "localstack.py"), "up", "--no-worker"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"local stack did not start:\n{r.stdout}\n{r.stderr}")
    return True


@pytest.fixture
def env(stack, tmp_path, request):
    from tests.harness import Env

    e = Env(tmp_path, name=request.node.name[:20].lower().replace("[", "_").replace("]", "").replace("-", "_"))
    yield e
    e.close()


@pytest.fixture(scope="module")
def db(stack, tmp_path_factory, request):
    """One isolated database per test module (tests use distinct account ids)."""
    from streams.store.db import make_pool
    from tests.harness import Env

    e = Env(tmp_path_factory.mktemp("db"), name=request.module.__name__.rsplit(".", 1)[-1][:20])
    e.pool = make_pool(e.settings, min_size=1, max_size=4, name=e.tag)
    yield e
    e.pool.close()
    e.close()


@pytest.fixture(scope="session")
def embedders():
    """The suite's embedder cache (tests/support/embedders.py): pass it to the containers tests build."""
    from tests.support.embedders import EMBEDDERS

    return EMBEDDERS


@pytest.fixture(scope="session")
def memory_embedder(embedders):
    """The configured memory embedder, loaded in this process."""
    from tests.support.embedders import shared_container

    c = shared_container()
    return c.in_process_embedder(c.settings.memory_embedding_provider, c.settings.memory_embedding_model)


@pytest.fixture(scope="session")
def use_embedder(embedders):
    from tests.support.embedders import use_embedder

    return use_embedder()


SERVICE_FIXTURES = {"stack", "env", "db"}


def pytest_collection_modifyitems(config, items):
    """Tests that reach a real service (directly or through a fixture) are marked
    ``services``; the rest are the unit tier that ``make test-fast`` runs."""
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("slow") \
                or item.get_closest_marker("debezium"):
            item.add_marker(pytest.mark.services)
