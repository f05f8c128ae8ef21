ALTER TABLE call_tasks DROP COLUMN variables;
DROP TABLE campaign_contacts;
DROP TABLE campaigns;
