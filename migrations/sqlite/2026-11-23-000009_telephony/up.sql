-- Telephony operations: the phone-number routing table of the inbound voice webhook,
-- outbound call tasks placed through Twilio's REST API, call recordings, and where agents
-- were pushed to on outside platforms.

-- A number routes inbound calls to one developer's agent; a number belongs to one developer.
CREATE TABLE phone_numbers (
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
CREATE INDEX phone_numbers_developer ON phone_numbers(developer_id, seq);

-- An outbound call: queued when placed, then as Twilio reports it (ringing, in-progress,
-- completed, busy, no-answer, failed, canceled). last_sequence orders Twilio's callbacks.
CREATE TABLE call_tasks (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    developer_id  TEXT NOT NULL REFERENCES developers(id),
    agent_id      TEXT NOT NULL,
    instance_id   TEXT,
    to_number     TEXT NOT NULL,
    from_number   TEXT NOT NULL,
    status        TEXT NOT NULL,
    call_sid      TEXT,
    session_id    TEXT,
    record        BOOLEAN NOT NULL,
    last_sequence BIGINT NOT NULL DEFAULT -1,
    duration_seconds BIGINT,
    error         TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX call_tasks_developer ON call_tasks(developer_id, seq);

-- A session's two-channel WAV: 'recording' while the call runs, then 'completed' (or
-- 'failed'). storage is 'local' (location relative to the recordings dir) or 's3' (the key).
CREATE TABLE recordings (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    session_id   TEXT NOT NULL UNIQUE,
    call_sid     TEXT,
    sample_rate  INTEGER NOT NULL,
    status       TEXT NOT NULL,
    storage      TEXT NOT NULL,
    location     TEXT NOT NULL,
    bytes        BIGINT NOT NULL DEFAULT 0,
    duration_ms  BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX recordings_call ON recordings(developer_id, call_sid);
CREATE INDEX recordings_age ON recordings(created_at);

-- An agent pushed to an outside platform: created there on the first sync, updated after.
CREATE TABLE agent_syncs (
    developer_id      TEXT NOT NULL REFERENCES developers(id),
    agent_id          TEXT NOT NULL,
    provider          TEXT NOT NULL,
    external_agent_id TEXT NOT NULL,
    synced_at         BIGINT NOT NULL,
    PRIMARY KEY (developer_id, agent_id, provider)
);
