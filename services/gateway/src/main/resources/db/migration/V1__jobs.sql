CREATE TABLE jobs (
    id            uuid PRIMARY KEY,
    tenant        varchar(100) NOT NULL,
    name          varchar(200),
    spec          text         NOT NULL,
    state         varchar(20)  NOT NULL,
    current_stage varchar(20),
    current_attempt uuid,
    error_code    varchar(100),
    error_message text,
    error_hint    text,
    created_at    timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL
);
CREATE INDEX jobs_tenant_created ON jobs (tenant, created_at DESC);

CREATE TABLE stage_attempts (
    id            uuid PRIMARY KEY,
    job_id        uuid         NOT NULL REFERENCES jobs (id),
    stage         varchar(20)  NOT NULL,
    attempt_no    int          NOT NULL,
    state         varchar(20)  NOT NULL,
    progress      double precision NOT NULL DEFAULT 0,
    message       text,
    inputs        text         NOT NULL,
    outputs       text,
    error_code    varchar(100),
    error_message text,
    error_hint    text,
    started_at    timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL,
    finished_at   timestamptz
);
CREATE INDEX stage_attempts_job ON stage_attempts (job_id, started_at);

CREATE TABLE outbox (
    id          bigserial PRIMARY KEY,
    topic       varchar(200) NOT NULL,
    message_key varchar(200) NOT NULL,
    payload     text         NOT NULL,
    created_at  timestamptz  NOT NULL,
    sent_at     timestamptz
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
