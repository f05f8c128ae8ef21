DROP TABLE session_analyses;
ALTER TABLE agents DROP COLUMN analysis;
