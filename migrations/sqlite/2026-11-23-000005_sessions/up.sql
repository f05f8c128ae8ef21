-- Real-time sessions (phone calls and direct sockets) and their turns. A Twilio session is
-- 'pending' from the moment its stream markup is issued until the stream connects ('active'),
-- which it can do once; it ends 'completed' or 'failed'. Turn times are milliseconds since the
-- session started; stage times are 0 where a stage did not run.

CREATE TABLE sessions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    agent_id     TEXT NOT NULL,
    transport    TEXT NOT NULL,
    call_sid     TEXT,
    from_number  TEXT,
    to_number    TEXT,
    instance_id  TEXT,
    status       TEXT NOT NULL,
    turn_count   INTEGER NOT NULL DEFAULT 0,
    tool_executions INTEGER NOT NULL DEFAULT 0,
    total_duration_ms BIGINT NOT NULL DEFAULT 0,
    avg_turn_latency_ms BIGINT NOT NULL DEFAULT 0,
    end_reason   TEXT,
    created_at   BIGINT NOT NULL,
    started_at   BIGINT,
    ended_at     BIGINT
);
CREATE INDEX sessions_developer ON sessions(developer_id, seq);
CREATE INDEX sessions_call_sid ON sessions(developer_id, call_sid);

CREATE TABLE session_turns (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_index  INTEGER NOT NULL,
    speaker     TEXT NOT NULL,
    text        TEXT NOT NULL,
    start_ms    BIGINT NOT NULL,
    end_ms      BIGINT NOT NULL,
    stt_ms      BIGINT NOT NULL,
    llm_ms      BIGINT NOT NULL,
    tts_ms      BIGINT NOT NULL,
    latency_ms  BIGINT,
    interrupted BOOLEAN NOT NULL,
    error       TEXT
);
CREATE INDEX session_turns_order ON session_turns(session_id, turn_index);
