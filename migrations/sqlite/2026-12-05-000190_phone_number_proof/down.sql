CREATE TABLE phone_numbers_unproven (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    phone_number TEXT NOT NULL UNIQUE,
    agent_id     TEXT NOT NULL,
    instance_id  TEXT,
    name         TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
INSERT INTO phone_numbers_unproven
    (seq, id, developer_id, phone_number, agent_id, instance_id, name, created_at, updated_at)
    SELECT seq, id, developer_id, phone_number, agent_id, instance_id, name, created_at, updated_at
    FROM phone_numbers WHERE verified_at IS NOT NULL;
DROP TABLE phone_numbers;
ALTER TABLE phone_numbers_unproven RENAME TO phone_numbers;
CREATE INDEX phone_numbers_developer ON phone_numbers(developer_id, seq);
