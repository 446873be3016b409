-- Dashboard sessions: a random id in the browser's cookie (only its sha256 here), bound to the API token used to sign in.
CREATE TABLE ui_sessions (
    id          uuid PRIMARY KEY,
    secret_hash varchar(64) NOT NULL UNIQUE,
    token_id    uuid        NOT NULL REFERENCES api_tokens (id),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
