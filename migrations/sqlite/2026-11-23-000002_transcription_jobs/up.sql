-- Asynchronous transcription jobs. A job is 'processing' until it is 'completed' (with its
-- result) or 'failed' (with a reason). The request (options and the audio URL, or the path of
-- the uploaded audio under the data directory) is kept so a job interrupted by a restart can
-- run again.

CREATE TABLE transcription_jobs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    -- The server that runs the job: after a restart each server resumes only its own jobs.
    node_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    request      TEXT NOT NULL,
    audio_path   TEXT,
    result       TEXT,
    error        TEXT,
    created_at   BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX transcription_jobs_unfinished ON transcription_jobs(node_id, status);
