-- The API key that placed an outbound call: the stream Twilio opens once the call is answered
-- is refused if that key was revoked or expired in the meantime.
ALTER TABLE call_tasks ADD COLUMN key_id TEXT;
