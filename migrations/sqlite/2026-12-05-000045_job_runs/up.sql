-- How many times a job has started running. A job cut by a crash runs again after the
-- restart only while this is below two, so a job that takes its node down cannot come back
-- for ever: the next start-up marks it failed with its reason.
ALTER TABLE transcription_jobs ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;
