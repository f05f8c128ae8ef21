DROP TABLE conversation_messages;
DROP TABLE conversations;
