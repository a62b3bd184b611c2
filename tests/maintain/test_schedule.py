from datetime import datetime, timedelta, timezone

from schemas.events import MemoryEvent
from streams.maintain.schedule import claim_if_due, purge_outbox
from streams.outbox.write import add_events, outbox_row

T = datetime(2026, 1, 5, 3, 0, tzinfo=timezone.utc)


def test_jobs_run_when_due_whoever_asks(env):
    week = timedelta(days=7)
    with env.conn() as c:
        assert claim_if_due(c, "aging", week, T)               # never ran
        assert not claim_if_due(c, "aging", week, T + timedelta(days=1))
        assert not claim_if_due(c, "aging", week, T + timedelta(days=6, hours=23))
        assert claim_if_due(c, "aging", week, T + week)        # a week later, even after restarts
        assert claim_if_due(c, "silence", timedelta(minutes=10), T)  # jobs are independent
    assert env.q("SELECT last_run_at FROM maintenance_runs WHERE job = 'aging'")[0]["last_run_at"] == T + week


def test_outbox_retention_relay_vs_debezium(env):
    with env.conn() as c:
        with c.transaction():
            add_events(c, [outbox_row("memory.created", MemoryEvent(memory_id=i, account_id=1, contact_id=1))
                           for i in range(4)])
        c.execute("UPDATE outbox SET created_at = now() - interval '3 days'")
        c.execute("UPDATE outbox SET status = 'processed', processed_at = now() - interval '2 days' "
                  "WHERE aggregateid IN ('0', '1')")
        now = datetime.now(timezone.utc)
        assert purge_outbox(c, older_than=timedelta(hours=24), now=now, any_status=False) == 2
        assert env.q("SELECT count(*) AS n FROM outbox WHERE status = 'pending'")[0]["n"] == 2
        # Debezium mode: nothing marks rows processed, so age alone decides
        assert purge_outbox(c, older_than=timedelta(hours=24), now=now, any_status=True) == 2
    assert env.q("SELECT count(*) AS n FROM outbox")[0]["n"] == 0
