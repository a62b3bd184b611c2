"""Topic creation asks the broker about our topics only, and never has one auto-created."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka.admin import AIOKafkaAdminClient

from streams.kafka.topics import OUTBOUND, _existing, base_topics, create_topics, qualified


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


def test_reading_from_the_beginning_starts_at_offset_zero_whatever_the_broker_calls_earliest(stack):
    """Tansu 0.6 answers "earliest" with the batch written first in time, which two concurrent
    producers can make a later offset than 0 (a CI run lost a partition's first 133 records so).
    ``assign_from_beginning`` positions every partition at offset 0 itself and reads them all."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from streams.bootstrap import consumer_config, producer_config
    from streams.kafka.topics import assign_from_beginning
    from streams.settings import Settings

    settings = Settings(topic_prefix=f"begin_{uuid.uuid4().hex[:8]}.")
    asyncio.run(create_topics(settings, [OUTBOUND]))
    topic = qualified(settings, OUTBOUND)

    async def run():
        producers = [AIOKafkaProducer(**producer_config(settings, f"p{i}", linger_ms=2)) for i in range(3)]
        for p in producers:
            await p.start()

        async def write(i, p):
            for j in range(0, 300, 30):   # many multi-record batches, written concurrently
                futures = [await p.send(topic, key=str(k).encode(), value=f"{i}-{k}".encode())
                           for k in range(j, j + 30)]
                await asyncio.gather(*futures)

        await asyncio.gather(*(write(i, p) for i, p in enumerate(producers)))
        for p in producers:
            await p.stop()
        consumer = AIOKafkaConsumer(**consumer_config(settings, None, "begin-test"))
        await consumer.start()
        try:
            tps = await assign_from_beginning(consumer, topic)
            assert len(tps) == settings.topic_partitions
            assert [await consumer.position(tp) for tp in tps] == [0] * len(tps)
            seen = []
            for _ in range(100):
                batch = await consumer.getmany(timeout_ms=300)
                seen += [r.value for recs in batch.values() for r in recs]
                if len(seen) >= 900:
                    break
            return seen
        finally:
            await consumer.stop()

    seen = asyncio.run(run())
    assert sorted(seen) == sorted(f"{i}-{k}".encode() for i in range(3) for k in range(300))
