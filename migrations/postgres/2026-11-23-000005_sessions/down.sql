DROP TABLE session_turns;
DROP TABLE sessions;
