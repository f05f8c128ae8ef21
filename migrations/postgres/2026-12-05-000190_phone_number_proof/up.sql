-- Routing a phone number needs proof that it is the developer's: a code texted to the number
-- and confirmed (verified_at). Until then the route is pending and takes no calls. A number
-- is unique among verified routes only, so a stranger's pending claim cannot block its owner;
-- one developer holds one route per number. Routes that existed before are kept as verified.
ALTER TABLE phone_numbers ADD COLUMN verified_at BIGINT;
ALTER TABLE phone_numbers ADD COLUMN code_hash TEXT;
ALTER TABLE phone_numbers ADD COLUMN code_expires_at BIGINT;
ALTER TABLE phone_numbers ADD COLUMN code_attempts INTEGER NOT NULL DEFAULT 0;
UPDATE phone_numbers SET verified_at = created_at;
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_phone_number_key;
ALTER TABLE phone_numbers ADD CONSTRAINT phone_numbers_developer_number_key UNIQUE (developer_id, phone_number);
CREATE UNIQUE INDEX phone_numbers_verified ON phone_numbers(phone_number) WHERE verified_at IS NOT NULL;
