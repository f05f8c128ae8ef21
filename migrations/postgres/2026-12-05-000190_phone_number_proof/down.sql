DELETE FROM phone_numbers WHERE verified_at IS NULL;
DROP INDEX phone_numbers_verified;
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_developer_number_key;
ALTER TABLE phone_numbers ADD CONSTRAINT phone_numbers_phone_number_key UNIQUE (phone_number);
ALTER TABLE phone_numbers DROP COLUMN code_attempts;
ALTER TABLE phone_numbers DROP COLUMN code_expires_at;
ALTER TABLE phone_numbers DROP COLUMN code_hash;
ALTER TABLE phone_numbers DROP COLUMN verified_at;
