-- What a call event was about, as JSON: a transfer's target and outcome, the digits pressed,
-- the answering machine's verdict. NULL for events that carry nothing more than their kind.
ALTER TABLE session_events ADD COLUMN detail TEXT;
