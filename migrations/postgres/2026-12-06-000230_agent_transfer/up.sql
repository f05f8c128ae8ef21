-- The people an agent may hand a phone call to: a JSON array of {name, number, description,
-- mode}, at most ten (see src/conversation/transfer.rs). Existing agents have none.
ALTER TABLE agents ADD COLUMN transfer TEXT NOT NULL DEFAULT '[]';
