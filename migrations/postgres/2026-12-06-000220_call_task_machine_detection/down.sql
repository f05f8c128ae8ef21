ALTER TABLE call_tasks DROP COLUMN machine_action;
ALTER TABLE call_tasks DROP COLUMN answered_by;
ALTER TABLE call_tasks DROP COLUMN voicemail_message;
ALTER TABLE call_tasks DROP COLUMN machine_detection;
