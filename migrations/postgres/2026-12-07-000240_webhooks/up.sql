-- Webhooks to integrators: the endpoints a developer registered, one delivery per event and
-- endpoint (the exact body sent, retried until the endpoint answers 2xx or a day has passed),
-- and every attempt made of each. Timestamps are Unix epoch milliseconds (UTC).

CREATE TABLE webhook_endpoints (
    seq          BIGSERIAL PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    url          TEXT NOT NULL,
    -- A JSON array of the event types it receives.
    events       TEXT NOT NULL,
    -- The signing secret, sealed with the provider-key master key.
    secret       TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_developer ON webhook_endpoints(developer_id, seq);

CREATE TABLE webhook_deliveries (
    seq             BIGSERIAL PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints(id),
    developer_id    TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    -- The JSON body, byte for byte what every attempt posts.
    payload         TEXT NOT NULL,
    -- pending, delivered or failed (gave up).
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- When the next attempt is due; while one runs, when its claim lapses.
    next_attempt_at BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    completed_at    BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, seq);

CREATE TABLE webhook_attempts (
    seq          BIGSERIAL PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries(id),
    attempt      INTEGER NOT NULL,
    attempted_at BIGINT NOT NULL,
    duration_ms  BIGINT NOT NULL,
    -- The endpoint's HTTP status; NULL when it could not be reached or timed out.
    status_code  INTEGER,
    error        TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, seq);
