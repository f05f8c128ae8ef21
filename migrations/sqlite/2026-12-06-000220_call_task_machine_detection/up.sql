-- Answering-machine detection on an outbound call: what was asked when it was placed
-- ('off', 'hangup' or 'message', with the message to leave after the beep), then Twilio's
-- verdict (its AnsweredBy) and what was done about it ('none', 'hung_up', 'left_message'),
-- NULL until the verdict arrives.
ALTER TABLE call_tasks ADD COLUMN machine_detection TEXT NOT NULL DEFAULT 'off';
ALTER TABLE call_tasks ADD COLUMN voicemail_message TEXT;
ALTER TABLE call_tasks ADD COLUMN answered_by TEXT;
ALTER TABLE call_tasks ADD COLUMN machine_action TEXT;
