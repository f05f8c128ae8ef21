ALTER TABLE call_tasks DROP COLUMN key_id;
