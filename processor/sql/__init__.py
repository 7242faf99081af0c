"""The Flink SQL front end: a sqlglot dialect (``dialect``), a position-keeping statement
splitter (``statements``), CREATE TABLE (``ddl``) and the statement kinds of a job file
(``script.parse_script``). Errors are ``SqlError`` with the line and column in the file."""
