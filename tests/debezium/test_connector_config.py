"""The connector file carries the outbox contract (docs/architecture.md §2), and translates faithfully to the engine.

No Java needed: these run everywhere.
"""

from __future__ import annotations

import json
import re

import pytest

from connectors.debezium.engine import CONNECTOR_FILE, engine_properties, event_router_alias, load_connector
from streams.kafka.topics import outbox_topic
from streams.settings import REPO_ROOT


@pytest.fixture(scope="module")
def connector() -> dict:
    return load_connector(CONNECTOR_FILE)


def _outbox_columns() -> set[str]:
    sql = (REPO_ROOT / "infra" / "migrations" / "0001_core.sql").read_text()
    body = re.search(r"CREATE TABLE outbox \((.*?)\n\);", sql, re.S).group(1)
    return {line.split()[0] for line in body.strip().splitlines() if line.strip()}


def test_event_router_produces_the_relay_shape(connector):
    c = connector["config"]
    assert c["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert c["plugin.name"] == "pgoutput"
    assert c["table.include.list"] == "public.outbox"
    t = f"transforms.{event_router_alias(c)}."
    assert c[t + "type"] == "io.debezium.transforms.outbox.EventRouter"
    # topic outbox.event.<aggregatetype>, exactly the relay's topic name
    assert c[t + "route.by.field"] == "aggregatetype"
    assert c[t + "route.topic.replacement"] == outbox_topic("${routedByValue}")
    # key = aggregateid, header id = row id, header type = type, value = expanded payload JSON
    assert c[t + "table.field.event.key"] == "aggregateid"
    assert c[t + "table.field.event.id"] == "id"
    assert c[t + "table.field.event.payload"] == "payload"
    assert c[t + "table.expand.json.payload"] == "true"
    assert c[t + "table.json.payload.null.behavior"] == "optional_bytes"  # keep null fields
    assert "type:header:type" in c[t + "table.fields.additional.placement"].split(",")
    assert c[t + "route.tombstone.on.empty.payload"] == "false"
    assert c["tombstones.on.delete"] == "false"
    assert c["extended.headers.enabled"] == "false"  # only id and type, like the relay
    # raw key, schemaless JSON value, raw UTF-8 headers
    assert c["key.converter"] == "org.apache.kafka.connect.storage.StringConverter"
    assert c["value.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    assert c["value.converter.schemas.enable"] == "false"
    assert c["header.converter"] == "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    # the predicate scopes the SMT to the outbox table's change topic
    pred = c[t + "predicate"]
    assert re.fullmatch(c[f"predicates.{pred}.pattern"], f"{c['topic.prefix']}.public.outbox")


def test_every_column_the_connector_reads_exists(connector):
    c = connector["config"]
    cols = _outbox_columns()
    t = f"transforms.{event_router_alias(c)}."
    used = {c[t + k] for k in ("route.by.field", "table.field.event.key", "table.field.event.id",
                               "table.field.event.payload")}
    used |= {p.split(":")[0] for p in c[t + "table.fields.additional.placement"].split(",")}
    assert used <= cols
    captured = {col for col in cols if re.fullmatch(c["column.include.list"], f"public.outbox.{col}")}
    assert used <= captured


def test_engine_properties_translate_connect_config(connector):
    props = engine_properties(connector, offsets_file="/tmp/x.dat", topic_prefix="t1.",
                              database_url="postgresql://alice:s3cret@db.example:6543/memoria",
                              overrides={"slot.name": "s1"}, environ={})
    assert props["name"] == connector["name"]
    assert props["offset.storage.file.filename"] == "/tmp/x.dat"
    assert (props["database.hostname"], props["database.port"], props["database.user"],
            props["database.password"], props["database.dbname"]) == \
        ("db.example", "6543", "alice", "s3cret", "memoria")
    assert props["slot.name"] == "s1"
    t = f"transforms.{event_router_alias(props)}."
    assert props[t + "route.topic.replacement"] == "t1.outbox.event.${routedByValue}"
    # the engine names converter classes "<kind>.converter.class"
    assert props["key.converter.class"] == connector["config"]["key.converter"]
    assert props["header.converter.class"] == connector["config"]["header.converter"]
    assert "key.converter" not in props and props["value.converter.schemas.enable"] == "false"
    assert not any(k.startswith("_") for k in props)
    assert "${env:" not in "".join(props.values())


def test_env_references_resolve_like_the_connect_config_provider(connector):
    env = {"PGHOST": "pg", "PGPORT": "5432", "PGUSER": "u", "PGPASSWORD": "p", "PGDATABASE": "d"}
    props = engine_properties(connector, offsets_file="/tmp/x.dat", environ=env)
    assert props["database.hostname"] == "pg" and props["database.dbname"] == "d"
    with pytest.raises(KeyError, match="PGHOST"):
        engine_properties(connector, offsets_file="/tmp/x.dat", environ={})


def test_register_puts_the_config_and_waits_until_running(connector):
    """connectors.debezium.register against a fake Kafka Connect REST API."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from connectors.debezium.register import register

    seen: dict = {"puts": [], "status_calls": 0}

    class FakeConnect(BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def _json(self, code, body):
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):  # noqa: N802
            if self.path == "/connectors":
                return self._json(200, [])
            seen["status_calls"] += 1
            state = "RUNNING" if seen["status_calls"] > 1 else "UNASSIGNED"
            return self._json(200, {"connector": {"state": state}, "tasks": [{"id": 0, "state": state}]})

        def do_PUT(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen["puts"].append((self.path, body))
            return self._json(201 if len(seen["puts"]) == 1 else 200, {"name": connector["name"]})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeConnect)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        logs: list[str] = []
        assert register(url, connector, timeout=30, log=logs.append, poll_s=0.05)
        assert register(url, connector, timeout=30, log=logs.append, poll_s=0.05)  # idempotent: an update
        path, body = seen["puts"][0]
        assert path == f"/connectors/{connector['name']}/config"
        assert body == {k: v for k, v in connector["config"].items() if k != "_comment"}
        assert any("created" in m for m in logs) and any("updated" in m for m in logs)
        assert logs[-1].endswith("RUNNING")
    finally:
        srv.shutdown()
