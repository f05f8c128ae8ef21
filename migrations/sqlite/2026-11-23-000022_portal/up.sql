-- The developer portal: one-time sign-in codes sent to a phone, the phone numbers developers
-- sign in with, and the portal's server-side sessions. Codes and session ids are stored only
-- as keyed hashes.

-- A sign-in code sent to a phone. code_hash is HMAC-SHA256 under the server's portal secret
-- (a 6-digit code has too little entropy for a plain hash). A code is used at most once:
-- consumed_at is set when it signs in, when it is burnt by too many wrong tries, or when a
-- newer code for the same number replaces it. Rows also count requests for the rate limits
-- per number and per client address.
CREATE TABLE portal_codes (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    phone        TEXT NOT NULL,
    code_hash    TEXT NOT NULL,
    client_ip    TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    consumed_at  BIGINT
);
CREATE INDEX portal_codes_phone ON portal_codes(phone, created_at);
CREATE INDEX portal_codes_ip ON portal_codes(client_ip, created_at);

-- The phone number a developer signs in with; a number belongs to one developer.
CREATE TABLE developer_phones (
    phone        TEXT PRIMARY KEY,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    created_at   BIGINT NOT NULL
);
CREATE INDEX developer_phones_developer ON developer_phones(developer_id);

-- A signed-in browser. id_hash is the SHA-256 of the random cookie value. A session ends when
-- it sits unused past the idle limit, at expires_at, or when it is revoked (sign-out).
CREATE TABLE portal_sessions (
    id_hash      TEXT PRIMARY KEY,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    phone        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    revoked_at   BIGINT
);
CREATE INDEX portal_sessions_developer ON portal_sessions(developer_id);
