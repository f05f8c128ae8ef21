-- Post-call analysis: what an agent asks of each of its finished calls (a JSON object
-- {summary, successCriteria, dataSchema}, NULL for nothing), and the analysis of each session
-- whose agent asked: its summary, whether the call met the criteria, the fields extracted.
-- Timestamps are Unix epoch milliseconds (UTC).

ALTER TABLE agents ADD COLUMN analysis TEXT;

CREATE TABLE session_analyses (
    session_id     TEXT PRIMARY KEY REFERENCES sessions(id),
    developer_id   TEXT NOT NULL,
    -- pending (running), completed (at least one part answered) or failed.
    status         TEXT NOT NULL,
    summary        TEXT,
    success        BOOLEAN,
    success_reason TEXT,
    -- The extracted fields, a JSON object valid against the agent's dataSchema.
    data           TEXT,
    -- A JSON array of what could not be answered, in words.
    errors         TEXT NOT NULL DEFAULT '[]',
    -- The language model's provider that answered.
    provider       TEXT,
    input_tokens   BIGINT NOT NULL DEFAULT 0,
    output_tokens  BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    completed_at   BIGINT
);
