-- Files users uploaded (model archives), stored whole under uploads/<id> once their stream completed and checked.
CREATE TABLE uploads (
    id            uuid PRIMARY KEY,
    tenant        varchar(100) NOT NULL,
    name          varchar(200) NOT NULL,
    size          bigint       NOT NULL,
    sha256        varchar(64)  NOT NULL,
    object_key    varchar(300) NOT NULL,
    format        varchar(20)  NOT NULL,
    files         int          NOT NULL,
    unpacked_size bigint       NOT NULL,
    created_at    timestamptz  NOT NULL
);
CREATE INDEX uploads_tenant_created ON uploads (tenant, created_at DESC);
