-- Routing a phone number needs proof that it is the developer's: a code texted to the number
-- and confirmed (verified_at). Until then the route is pending and takes no calls. A number
-- is unique among verified routes only, so a stranger's pending claim cannot block its owner;
-- one developer holds one route per number. Routes that existed before are kept as verified.
-- SQLite cannot drop a column's UNIQUE constraint, so the table is rebuilt with the same rows.
CREATE TABLE phone_numbers_proven (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    developer_id    TEXT NOT NULL REFERENCES developers(id),
    phone_number    TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    instance_id     TEXT,
    name            TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    verified_at     BIGINT,
    code_hash       TEXT,
    code_expires_at BIGINT,
    code_attempts   INTEGER NOT NULL DEFAULT 0,
    UNIQUE (developer_id, phone_number)
);
INSERT INTO phone_numbers_proven
    (seq, id, developer_id, phone_number, agent_id, instance_id, name, created_at, updated_at, verified_at)
    SELECT seq, id, developer_id, phone_number, agent_id, instance_id, name, created_at, updated_at, created_at
    FROM phone_numbers;
DROP TABLE phone_numbers;
ALTER TABLE phone_numbers_proven RENAME TO phone_numbers;
CREATE INDEX phone_numbers_developer ON phone_numbers(developer_id, seq);
CREATE UNIQUE INDEX phone_numbers_verified ON phone_numbers(phone_number) WHERE verified_at IS NOT NULL;
