ALTER TABLE transcription_jobs DROP COLUMN runs;
