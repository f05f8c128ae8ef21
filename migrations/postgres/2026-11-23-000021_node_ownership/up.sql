-- Which node runs a live session and writes a call's recording: when that node comes back
-- after a crash, it ends what it owned and can no longer finish (see
-- `store::sessions::fail_abandoned`). Other nodes sharing the database leave them alone.
ALTER TABLE sessions ADD COLUMN node_id TEXT;
ALTER TABLE recordings ADD COLUMN node_id TEXT;
CREATE INDEX sessions_node_status ON sessions(node_id, status);
CREATE INDEX recordings_node_status ON recordings(node_id, status);
