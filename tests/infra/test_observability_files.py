"""Deployment and observability files stay consistent with the code.

* the compose file parses, runs every role, and only uses variables the code reads;
* every metric an alert or a dashboard panel queries exists in streams/metrics.py,
  and every metric there has a dashboard panel;
* promtool (Debian package ``prometheus``) validates the Prometheus config, the
  alert rules and every dashboard query, when it is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from streams.settings import REPO_ROOT, Settings

INFRA = REPO_ROOT / "infra"
COMPOSE = INFRA / "compose" / "docker-compose.yml"
PROMETHEUS = INFRA / "prometheus" / "prometheus.yml"
ALERTS = INFRA / "prometheus" / "alerts.yml"
DASHBOARD = INFRA / "grafana" / "dashboards" / "memoria.json"
DATASOURCES = INFRA / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDERS = INFRA / "grafana" / "provisioning" / "dashboards" / "memoria.yml"

ROLE_COMMANDS = {
    "relay": ["worker", "--roles", "relay"],
    "ingest": ["worker", "--roles", "ingest"],
    "learn": ["worker", "--roles", "learn"],
    "respond": ["worker", "--roles", "respond"],
    "maintain": ["worker", "--roles", "maintain"],
    "whatsapp": ["connectors", "whatsapp-webhook"],
    "admin": ["admin", "serve"],
}
_SUFFIXES = {"counter": ("", "_created"), "gauge": ("",),
             "histogram": ("_bucket", "_sum", "_count", "_created"), "summary": ("", "_sum", "_count", "_created")}


# ------------------------------------------------------------------ helpers
def defined_metrics() -> dict[str, str]:
    """name → type, parsed from streams/metrics.py."""
    src = (REPO_ROOT / "streams" / "metrics.py").read_text()
    found = {name: kind.lower() for kind, name in
             re.findall(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"([a-zA-Z_:][a-zA-Z0-9_:]*)\"", src)}
    assert len(found) >= 20, "could not parse streams/metrics.py"
    return found


def series_names() -> set[str]:
    """Every series name Prometheus can see for the metrics in streams/metrics.py."""
    out = set()
    for name, kind in defined_metrics().items():
        base = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
        out |= {name} | {base + s for s in _SUFFIXES[kind] if s}
    return out


def referenced(expr: str) -> set[str]:
    return set(re.findall(r"\bmemoria_[a-z0-9_]+", expr))


def alert_rules() -> list[dict]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def dashboard_targets() -> list[tuple[dict, dict]]:
    return [(p, t) for p in dashboard()["panels"] for t in p.get("targets", [])]


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


# ------------------------------------------------------------------ compose
def test_compose_parses_and_runs_every_role():
    services = compose()["services"]
    for svc, cmd in ROLE_COMMANDS.items():
        assert svc in services, f"no service for role {svc}"
        assert services[svc]["command"][: len(cmd)] == cmd, svc
        assert services[svc]["image"] == services["ingest"]["image"], "one image for every role"
    for svc in ("kafka", "connect", "connect-register", "postgres", "qdrant", "prometheus", "grafana", "init"):
        assert svc in services, svc
    # the relay and Debezium are alternatives, chosen by profile
    assert services["relay"]["profiles"] == ["relay"]
    assert services["connect"]["profiles"] == services["connect-register"]["profiles"] == ["debezium"]
    assert not set(services["ingest"].get("profiles", []))
    assert "apache/kafka" in services["kafka"]["image"] and "controller" in services["kafka"]["environment"][
        "KAFKA_PROCESS_ROLES"]
    assert "quay.io/debezium/connect" in services["connect"]["image"]
    assert "pgvector/pgvector:pg17" == services["postgres"]["image"]
    assert "wal_level=logical" in services["postgres"]["command"]
    build = services["ingest"]["build"]
    dockerfile = (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve()
    assert dockerfile == (INFRA / "compose" / "Dockerfile").resolve()
    assert dockerfile.read_text().startswith("# ") and "FROM python:3.11-slim" in dockerfile.read_text()
    # the registration job PUTs the connector file that the Debezium test runs
    reg = services["connect-register"]["command"]
    path = reg[reg.index("--connector") + 1]
    assert (REPO_ROOT / Path(path).relative_to("/app")).is_file()


def test_compose_uses_only_variables_the_code_reads():
    cli = (REPO_ROOT / "streams" / "cli.py").read_text()
    known = {f"MEMORIA_{name.upper()}" for name in Settings.model_fields}
    for field in Settings.model_fields.values():  # QDRANT_URL, OPENAI_BASE_URL, DATABASE_URL, ...
        alias = field.validation_alias
        known |= set(getattr(alias, "choices", []) or [])
    known |= set(re.findall(r'envvar="([A-Z_]+)"', cli))
    services = compose()["services"]
    for svc in ROLE_COMMANDS:
        env = services[svc]["environment"]
        ours = {k for k in env if k.startswith(("MEMORIA_", "QDRANT_", "OPENAI_", "DATABASE_"))}
        assert ours <= known, f"{svc}: unknown variables {sorted(ours - known)}"
        for required in ("MEMORIA_KAFKA_BOOTSTRAP_SERVERS", "MEMORIA_DATABASE_URL", "QDRANT_URL",
                         "OPENAI_BASE_URL", "OPENAI_API_KEY", "MEMORIA_EMBEDDING_PROVIDER",
                         "MEMORIA_EMBEDDING_MODEL", "MEMORIA_METRICS_PORT"):
            assert required in env, f"{svc} lacks {required}"
        assert env["MEMORIA_WORKER_WEB_HOST"] == "0.0.0.0"  # reachable by Prometheus


def test_each_worker_role_has_its_own_consumer_group():
    """Replicas of a role share a group (partitions, one timer leader); roles never share one."""
    from streams.app import ALL_ROLES, consumer_group_for
    from streams.settings import Settings

    services = compose()["services"]
    s = Settings(consumer_group="memoria")
    groups = {}
    for svc, cmd in ROLE_COMMANDS.items():
        if cmd[0] != "worker":
            continue
        env = services[svc]["environment"]
        assert env.get("MEMORIA_CONSUMER_GROUP", "memoria") == "memoria"
        roles = cmd[cmd.index("--roles") + 1].split(",")
        groups[svc] = consumer_group_for(s, roles)
    assert len(set(groups.values())) == len(groups), groups
    assert consumer_group_for(s, list(ALL_ROLES)) == "memoria"
    assert consumer_group_for(s, ["respond"]) == consumer_group_for(s, ["respond"]) == "memoria-respond"
    assert consumer_group_for(s, ["learn", "relay"]) == "memoria-relay-learn"


def test_prometheus_scrapes_every_role_and_loads_the_rules():
    cfg = yaml.safe_load(PROMETHEUS.read_text())
    assert [Path(f).name for f in cfg["rule_files"]] == [ALERTS.name]
    names = {n for job in cfg["scrape_configs"] for sd in job.get("dns_sd_configs", []) for n in sd["names"]}
    assert set(ROLE_COMMANDS) <= names
    services = compose()["services"]
    port = {job["job_name"]: sd["port"] for job in cfg["scrape_configs"] for sd in job.get("dns_sd_configs", [])}
    assert str(port["memoria"]) == services["ingest"]["environment"]["MEMORIA_METRICS_PORT"]


# ------------------------------------------------------------------ alerts and dashboard
def test_alerts_cover_the_operational_risks_with_existing_metrics():
    known = series_names()
    rules = alert_rules()
    for r in rules:
        assert referenced(r["expr"]) <= known, f"{r['alert']}: unknown metrics {referenced(r['expr']) - known}"
        assert r["labels"]["severity"] in {"warning", "critical"} and r["annotations"]["summary"]
    exprs = " ".join(r["expr"] for r in rules)
    assert "memoria_outbox_lag_seconds" in exprs
    assert "increase(memoria_events_dead_lettered_total" in exprs
    recall = [r["expr"] for r in rules if "memoria_recall_seconds_bucket" in r["expr"]]
    assert recall and "histogram_quantile(0.99" in recall[0] and re.search(r">\s*0\.5\b", recall[0])
    assert "rate(memoria_extraction_failures_total" in exprs
    assert "rate(memoria_degraded_replies_total" in exprs


def test_dashboard_has_a_panel_for_every_metric_and_no_unknown_ones():
    known = series_names()
    targets = dashboard_targets()
    assert targets
    used: set[str] = set()
    for panel, t in targets:
        refs = referenced(t["expr"])
        assert refs <= known, f"panel {panel['title']!r}: unknown metrics {refs - known}"
        used |= refs
    for name, kind in defined_metrics().items():
        base = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
        assert {name, base + "_bucket", base + "_count"} & used, f"no dashboard panel shows {name}"


def test_dashboard_and_provisioning_fit_together():
    d = dashboard()
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)) and d["uid"] and d["title"]
    ds = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    uids = {x["uid"] for x in ds}
    for panel, t in dashboard_targets():
        assert panel["datasource"]["uid"] in uids and t["datasource"]["uid"] in uids
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
    providers = yaml.safe_load(DASHBOARD_PROVIDERS.read_text())["providers"]
    mounts = compose()["services"]["grafana"]["volumes"]
    assert any(m.startswith("../grafana/dashboards:" + providers[0]["options"]["path"]) for m in mounts)


# ------------------------------------------------------------------ promtool
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed "
                                    "(apt-get install prometheus); YAML and metric checks above still run")


def _promtool(*args: str) -> None:
    r = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


@needs_promtool
def test_promtool_accepts_config_and_rules(tmp_path):
    _promtool("check", "rules", str(ALERTS))
    cfg = yaml.safe_load(PROMETHEUS.read_text())
    cfg["rule_files"] = [str(ALERTS)]  # the container path does not exist here
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(cfg))
    _promtool("check", "config", str(tmp_path / "prometheus.yml"))


@needs_promtool
def test_promtool_parses_every_dashboard_query(tmp_path):
    rules = [{"record": f"dashboard:panel{p['id']}:{t['refId'].lower()}", "expr": t["expr"]}
             for p, t in dashboard_targets()]
    (tmp_path / "dash.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    _promtool("check", "rules", str(tmp_path / "dash.yml"))
