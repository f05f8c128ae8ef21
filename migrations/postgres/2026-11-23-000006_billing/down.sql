DROP TABLE rate_limit_windows;
DROP TABLE stripe_events;
ALTER TABLE usage_counters DROP COLUMN carryover;
DROP INDEX developers_stripe_customer;
ALTER TABLE developers DROP COLUMN tier_expires_at;
ALTER TABLE developers DROP COLUMN stripe_subscription_id;
ALTER TABLE developers DROP COLUMN stripe_customer_id;
