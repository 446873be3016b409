-- An admin token may create and revoke tokens of every tenant (it sees no other tenant's jobs or artifacts).
ALTER TABLE api_tokens ADD COLUMN admin boolean NOT NULL DEFAULT false;
UPDATE api_tokens SET admin = true WHERE name = 'bootstrap';
