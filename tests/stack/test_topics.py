"""Topic creation asks the broker about our topics only, and never has one auto-created."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka.admin import AIOKafkaAdminClient

from streams.kafka.topics import _existing, base_topics, create_topics, qualified


def test_missing_topics_are_created_once_and_a_check_creates_nothing(stack):
    from streams.settings import Settings

    settings = Settings(topic_prefix=f"topics_{uuid.uuid4().hex[:8]}.")
    names = [qualified(settings, n) for n in base_topics()]

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
        await admin.start()
        try:
            assert await _existing(admin, names) == set()
            assert await _existing(admin, names) == set()   # asking did not create them
            assert set(await create_topics(settings)) == set(names)
            assert await _existing(admin, names) == set(names)
            assert await create_topics(settings) == []      # present: nothing to do
            ghost = f"{names[0]}.never"
            assert await _existing(admin, [ghost, names[0]]) == {names[0]}
            assert ghost not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())
