DROP INDEX recordings_node_status;
DROP INDEX sessions_node_status;
ALTER TABLE recordings DROP COLUMN node_id;
ALTER TABLE sessions DROP COLUMN node_id;
