-- Outbound campaigns: one agent calling a list of contacts from one caller id, a few at a
-- time, within calling hours, retrying the calls nobody answered. A node runs a campaign
-- while it holds its lease (runner_node until lease_until); each contact's call is an
-- outbound call task. Timestamps are Unix epoch milliseconds (UTC).

CREATE TABLE campaigns (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    developer_id    TEXT NOT NULL REFERENCES developers(id),
    agent_id        TEXT NOT NULL,
    name            TEXT,
    from_number     TEXT NOT NULL,
    -- active, paused, completed or canceled.
    status          TEXT NOT NULL,
    -- Why a campaign stopped placing calls by itself (credits spent), while paused.
    status_reason   TEXT,
    max_concurrent  INTEGER NOT NULL,
    -- Calling hours as a JSON object {start, end, timezone, days}; NULL for any time.
    call_window     TEXT,
    max_attempts    INTEGER NOT NULL,
    retry_delay_ms  BIGINT NOT NULL,
    -- A JSON array of the outcomes that are tried again (no-answer, busy, failed).
    retry_on        TEXT NOT NULL,
    machine_detection TEXT NOT NULL,
    voicemail_message TEXT,
    record          BOOLEAN NOT NULL,
    -- The API key that created it (its revocation stops the calls' streams) and the base URL
    -- Twilio reaches this service at, for the calls' webhooks.
    key_id          TEXT,
    public_base     TEXT NOT NULL,
    runner_node     TEXT,
    lease_until     BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    completed_at    BIGINT
);
CREATE INDEX campaigns_developer ON campaigns(developer_id, seq);
CREATE INDEX campaigns_status ON campaigns(status);

CREATE TABLE campaign_contacts (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign_id     TEXT NOT NULL REFERENCES campaigns(id),
    contact_index   INTEGER NOT NULL,
    to_number       TEXT NOT NULL,
    -- A JSON object: the contact's variables for the agent's prompt and greeting.
    variables       TEXT NOT NULL,
    -- pending, calling, completed, no-answer, busy, failed or canceled.
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    -- The outbound call task of the latest attempt.
    task_id         TEXT,
    last_outcome    TEXT,
    error           TEXT,
    updated_at      BIGINT NOT NULL,
    UNIQUE (campaign_id, contact_index)
);
CREATE INDEX campaign_contacts_due ON campaign_contacts(campaign_id, status, next_attempt_at);
CREATE INDEX campaign_contacts_task ON campaign_contacts(task_id);

-- The variables an outbound call's agent is given (a campaign contact's), as a JSON object.
ALTER TABLE call_tasks ADD COLUMN variables TEXT;
