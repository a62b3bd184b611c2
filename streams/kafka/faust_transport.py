"""A Faust app whose consumer long-polls for a configurable time.

Faust hard-codes ``fetch_max_wait_ms=1500`` for its consumer. Apache Kafka
answers a fetch as soon as data arrives, so that only bounds idle polling;
the embedded Tansu broker holds a fetch for the whole wait when the partition
was empty at request time (measured: ~0.65 s median commit→processed lag at
50 chunks/s). ``MEMORIA_KAFKA_FETCH_MAX_WAIT_MS`` sets it (default 100 ms).
"""

from __future__ import annotations

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport):
        consumer = super()._create_worker_consumer(transport)
        wait = getattr(self.app.conf, "memoria_fetch_max_wait_ms", None)
        if wait is not None:
            consumer._fetch_max_wait_ms = int(wait)  # noqa: SLF001 - read by AIOKafkaConsumer.start()
        return consumer


class _Consumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self):
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Transport(faust_aiokafka.Transport):
    Consumer = _Consumer


class App(faust.App):
    def _new_transport(self):
        return _Transport(self.conf.broker_consumer, self)
