-- Billing: the developer's Stripe customer and tier expiry, credits carried into a period,
-- processed Stripe webhook events (for idempotency), and the shared rate-limit windows
-- several nodes count requests in.

ALTER TABLE developers ADD COLUMN stripe_customer_id TEXT;
ALTER TABLE developers ADD COLUMN stripe_subscription_id TEXT;
ALTER TABLE developers ADD COLUMN tier_expires_at BIGINT;
CREATE UNIQUE INDEX developers_stripe_customer ON developers(stripe_customer_id)
    WHERE stripe_customer_id IS NOT NULL;

ALTER TABLE usage_counters ADD COLUMN carryover DOUBLE PRECISION NOT NULL DEFAULT 0;

CREATE TABLE stripe_events (
    id           TEXT PRIMARY KEY,
    event_type   TEXT NOT NULL,
    developer_id TEXT,
    received_at  BIGINT NOT NULL
);

CREATE TABLE rate_limit_windows (
    key_id       TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, window_start)
);
