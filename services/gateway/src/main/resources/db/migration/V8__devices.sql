-- Device runners (each with its own token, bound to a tenant) and the benchmark tasks they lease.
CREATE TABLE devices (
    id            uuid PRIMARY KEY,
    tenant        varchar(100) NOT NULL,
    name          varchar(200) NOT NULL,
    token_hash    varchar(64)  NOT NULL UNIQUE,
    info          text,
    last_seen     timestamptz,
    current_task  uuid,
    created_at    timestamptz  NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE benchmark_tasks (
    id            uuid PRIMARY KEY,          -- the benchmark stage attempt
    job_id        uuid         NOT NULL,
    tenant        varchar(100) NOT NULL,
    task          text         NOT NULL,     -- the BenchmarkTask a runner receives
    selector      varchar(200),              -- device name or SoC the job asked for, or null
    state         varchar(20)  NOT NULL,     -- queued, leased, done
    device_id     uuid,
    lease_until   timestamptz,
    created_at    timestamptz  NOT NULL
);
CREATE INDEX benchmark_tasks_queued ON benchmark_tasks (tenant, state, created_at);
