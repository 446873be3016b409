CREATE TABLE api_tokens (
    id          uuid PRIMARY KEY,
    tenant      varchar(100) NOT NULL,
    name        varchar(200) NOT NULL,
    token_hash  varchar(64)  NOT NULL UNIQUE,
    created_at  timestamptz  NOT NULL,
    revoked_at  timestamptz
);
