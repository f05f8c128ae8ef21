-- A code answers one request: the browser that asked gets a random challenge id (only its
-- SHA-256 is kept here) and must present it with the code, so wrong tries by anyone else
-- cannot burn it and a newer request does not replace it. `trusted`: the request came from
-- a browser that signed in with this number before (its device cookie), which the
-- number-wide send limit does not hold back.
ALTER TABLE portal_codes ADD COLUMN challenge_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE portal_codes ADD COLUMN trusted BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX portal_codes_challenge ON portal_codes(challenge_hash);
