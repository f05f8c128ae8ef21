DROP TABLE transcription_jobs;
