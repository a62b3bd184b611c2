"""The worker with MEMORIA_EMBEDDING_SERVICE_URL: while the service is down the
ingest batch waits (no dead letter, nothing lost); once it is up the chunks are
indexed through it and the responder embeds messages through it too."""

from __future__ import annotations

import pytest

from streams.kafka.topics import INBOUND, dlq_topic, outbox_topic, qualified
from tests.embedding.test_service import Server, config
from tests.harness import consume_all, free_port, wait_until

pytestmark = pytest.mark.slow


def test_worker_waits_for_the_service_then_ingests_and_answers_through_it(env, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env.start_worker("relay,ingest,respond", extra_env={
        "MEMORIA_EMBEDDING_SERVICE_URL": url, "MEMORIA_EMBEDDING_SERVICE_PASSAGE_PATIENCE": "0.5",
        "MEMORIA_LOG_LEVEL": "INFO"})
    doc = tmp_path / "precos.md"
    doc.write_text("# Preços\n\nO pernoite na suíte Luxo custa R$ 240.\n\n"
                   "A suíte Master tem piscina aquecida e custa R$ 450 o pernoite.")
    env.memoria("ingest", str(doc), "--account", "1")
    live = env.q("SELECT count(*) AS n FROM chunks WHERE deleted_at IS NULL")[0]["n"]
    assert live >= 1
    # the service is down: the batch waits for it (logged), nothing is dead-lettered or indexed
    wait_until(lambda: "consumer stalled" in env.worker_log() and "dependency=embedding" in env.worker_log(), 60,
               what="the ingest batch waiting")
    chunk_topic = qualified(env.settings, outbox_topic("chunk"))
    assert consume_all(env.settings, dlq_topic(chunk_topic), 1, timeout=3) == []
    assert env.metrics().get("memoria_chunks_embedded_total", 0) == 0

    with Server(config(), port=port) as service:
        wait_until(lambda: env.metrics().get("memoria_chunks_embedded_total", 0) >= live, 120,
                   what="chunks indexed through the service")
        embedded = service.metric('memoria_embedding_service_texts_total{model="use-multilingual-v3"}')
        assert embedded >= live
        reply = __import__("json").loads(env.memoria(
            "ask", "--json", "--account", "1", "--inbox", "10", "--contact", "100", "--timeout", "60",
            "quanto custa o pernoite na suíte Luxo?").stdout)
        assert "R$ 240" in reply["text"], reply
        assert "recall_error" not in reply.get("degraded", []) and "knowledge_error" not in reply.get("degraded", [])
        # the message was embedded by the service (the worker loaded no model of its own)
        assert service.metric('memoria_embedding_service_texts_total{model="use-multilingual-v3"}') > embedded
    assert consume_all(env.settings, dlq_topic(chunk_topic), 1, timeout=2) == []
    assert consume_all(env.settings, dlq_topic(qualified(env.settings, INBOUND)), 1, timeout=2) == []
    assert "embedder loaded" not in env.worker_log()
