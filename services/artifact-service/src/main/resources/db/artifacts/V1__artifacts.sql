-- The artifact catalogue: one row per output of a stage attempt. Content lives once in object storage under its
-- digest (objects/<sha256>); rows of different jobs or tenants may name the same content.
CREATE TABLE artifacts (
    id            uuid PRIMARY KEY,
    tenant        varchar(100) NOT NULL,
    job_id        uuid         NOT NULL,
    attempt_id    uuid         NOT NULL,
    stage         varchar(20)  NOT NULL,
    kind          varchar(100) NOT NULL,
    sha256        varchar(64)  NOT NULL,
    size          bigint       NOT NULL,
    file_count    int          NOT NULL,
    root_digest   varchar(64)  NOT NULL,
    signature_key varchar(300) NOT NULL,
    key_hint      varchar(64)  NOT NULL,
    provenance    boolean      NOT NULL,
    created_at    timestamptz  NOT NULL
);
CREATE INDEX artifacts_tenant_created ON artifacts (tenant, created_at DESC);
CREATE INDEX artifacts_job ON artifacts (job_id);
