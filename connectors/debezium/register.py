"""Register (or update) the outbox connector on a Kafka Connect cluster. Idempotent.

    python -m connectors.debezium.register --url http://connect:8083 [--connector FILE] [--timeout 300]

Waits for the Connect REST API, ``PUT /connectors/<name>/config`` (creates or
updates), then waits until the connector and its task report RUNNING; exits 1
with Connect's error trace when they FAIL or the timeout expires. Standard
library only, so it runs in any Python image.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CONNECTOR_FILE = Path(__file__).with_name("outbox-connector.json")


def _call(method: str, url: str, body: dict | None = None, timeout: float = 10.0) -> tuple[int, dict | list | None]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"message": raw.decode(errors="replace")}


def register(url: str, connector: dict, timeout: float = 300.0, log=print, poll_s: float = 2.0) -> bool:
    """PUT the connector's config (idempotent) once Connect answers, then wait until it and its tasks run;
    ``poll_s`` is the wait between two checks."""
    url = url.rstrip("/")
    name = connector["name"]
    deadline = time.time() + timeout
    while True:  # the Connect worker takes a while to join its group
        try:
            status, _ = _call("GET", f"{url}/connectors")
            if status == 200:
                break
        except OSError as e:
            status = repr(e)
        if time.time() > deadline:
            log(f"register: Kafka Connect at {url} not ready after {timeout:.0f}s (last: {status})")
            return False
        time.sleep(poll_s)
    config = {k: v for k, v in connector["config"].items() if not k.startswith("_")}  # drop comments
    status, body = _call("PUT", f"{url}/connectors/{name}/config", config, timeout=60)
    if status not in (200, 201):
        log(f"register: PUT {name} failed with HTTP {status}: {json.dumps(body)[:2000]}")
        return False
    log(f"register: connector {name} {'created' if status == 201 else 'updated'}")
    while time.time() < deadline:
        status, body = _call("GET", f"{url}/connectors/{name}/status")
        if status == 200 and isinstance(body, dict):
            states = [body.get("connector", {}).get("state")] + [t.get("state") for t in body.get("tasks", [])]
            if "FAILED" in states:
                traces = [t.get("trace", "") for t in [body.get("connector", {})] + body.get("tasks", [])]
                log(f"register: connector {name} FAILED:\n" + "\n".join(t for t in traces if t)[:4000])
                return False
            if len(states) > 1 and all(s == "RUNNING" for s in states):
                log(f"register: connector {name} RUNNING")
                return True
        time.sleep(poll_s)
    log(f"register: connector {name} not RUNNING after {timeout:.0f}s")
    return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m connectors.debezium.register", description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://connect:8083", help="Kafka Connect REST URL")
    ap.add_argument("--connector", default=str(CONNECTOR_FILE), help="connector JSON ({name, config})")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    connector = json.loads(Path(args.connector).read_text())
    return 0 if register(args.url, connector, args.timeout) else 1


if __name__ == "__main__":
    sys.exit(main())
