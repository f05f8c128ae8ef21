DROP TABLE portal_sessions;
DROP TABLE developer_phones;
DROP TABLE portal_codes;
