ALTER TABLE session_events DROP COLUMN detail;
