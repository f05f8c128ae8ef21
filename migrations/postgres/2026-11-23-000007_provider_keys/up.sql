-- Vendor keys developers store for their own use (BYOK without a header). Only the sealed
-- form is kept: AES-256-GCM under the server's master key, bound to developer and provider.
CREATE TABLE provider_keys (
    developer_id     TEXT NOT NULL REFERENCES developers(id),
    provider         TEXT NOT NULL,
    sealed_key       TEXT NOT NULL,
    key_hint         TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    last_verified_at BIGINT,
    PRIMARY KEY (developer_id, provider)
);
