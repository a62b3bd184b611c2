-- When each leader-only maintenance job last ran. Timers tick often and run a
-- job only when it is due, so a weekly job still runs when workers restart
-- more often than once a week.
CREATE TABLE maintenance_runs (
    job          text PRIMARY KEY,
    last_run_at  timestamptz NOT NULL
);
