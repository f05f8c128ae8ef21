DROP INDEX portal_codes_challenge;
ALTER TABLE portal_codes DROP COLUMN trusted;
ALTER TABLE portal_codes DROP COLUMN challenge_hash;
