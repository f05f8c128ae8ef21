-- What a session's trace holds beyond the turns' timings: per agent reply the latency
-- breakdown (end of speech to first audio: endpointing, recognition, model, tools,
-- synthesis, our own overhead; latency_ms is their total), the provider that served each
-- stage (a fallback, when the agent's own failed), and for an interrupted reply how the
-- interruption went (detection and stop latency in ms, the agent words heard over the
-- caller, whether the client asked for it). Caller turns say how their end was decided.

ALTER TABLE session_turns ADD COLUMN endpoint TEXT;
ALTER TABLE session_turns ADD COLUMN endpoint_ms BIGINT;
ALTER TABLE session_turns ADD COLUMN tool_ms BIGINT;
ALTER TABLE session_turns ADD COLUMN platform_ms BIGINT;
ALTER TABLE session_turns ADD COLUMN stt_provider TEXT;
ALTER TABLE session_turns ADD COLUMN llm_provider TEXT;
ALTER TABLE session_turns ADD COLUMN tts_provider TEXT;
ALTER TABLE session_turns ADD COLUMN barge_in_detection_ms BIGINT;
ALTER TABLE session_turns ADD COLUMN barge_in_stop_ms BIGINT;
ALTER TABLE session_turns ADD COLUMN bleed_through TEXT;
ALTER TABLE session_turns ADD COLUMN barge_in_requested BOOLEAN;

-- Tool calls a session's agent made, with the agent turn they belong to.
CREATE TABLE session_tool_calls (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_index  INTEGER NOT NULL,
    call_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    output      TEXT NOT NULL,
    is_error    BOOLEAN NOT NULL,
    duration_ms BIGINT NOT NULL
);
CREATE INDEX session_tool_calls_order ON session_tool_calls(session_id, seq);

-- Things a session noticed that are no turn: 'unrecognised_speech' (the VAD heard speech,
-- the recogniser found no words in it; turn_index is the agent turn it interrupted, if it
-- did: a false barge-in). Times are ms since the session started.
CREATE TABLE session_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    turn_index  INTEGER,
    start_ms    BIGINT NOT NULL,
    end_ms      BIGINT NOT NULL
);
CREATE INDEX session_events_order ON session_events(session_id, seq);
