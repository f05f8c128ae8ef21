ALTER TABLE agents DROP COLUMN transfer;
