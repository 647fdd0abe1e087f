-- herald schema, version 14 (SQLite): a first call that succeeds is recorded on its task row.

-- One write fewer per task on the happy path: the SENT change of a task whose first call
-- succeeded carries that call's start and end, and no attempts row is written for it. The
-- attempt (number 1, outcome success, the task's provider_request_id, its detail the provider's
-- message id) is read back from these columns with the task's other attempts; every other
-- attempt, and a first success whose SENT change did not apply, keeps its attempts row. Unix
-- micros; NULL when the first call's outcome is in attempts (or there was none).
ALTER TABLE tasks ADD COLUMN first_call_started_at BIGINT NULL;
ALTER TABLE tasks ADD COLUMN first_call_finished_at BIGINT NULL;
