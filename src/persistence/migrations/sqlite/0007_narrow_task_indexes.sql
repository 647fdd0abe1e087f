-- herald schema, version 7: fewer and narrower task indexes (issue 9, docs/benchmarks.md).
-- A state change moves the row's status, so it cannot be a heap-only update: every change
-- writes a new entry into every index on tasks. Each index a row version does not need is
-- work taken off the hot path (claim, SENDING, result: three row versions per task).

-- Pages of unfinished tasks and of dead letters read one state at a time in id order
-- (load_unfinished, list_dead_letters): one partial index per state, so a row version enters
-- at most one of them, and a SENT, DELIVERED or READ row enters none. The due time of a
-- RETRY_WAIT task is checked on the rows of its page.
CREATE INDEX tasks_pending_id ON tasks (id) WHERE status = 'PENDING';
CREATE INDEX tasks_retry_wait_id ON tasks (id) WHERE status = 'RETRY_WAIT';
CREATE INDEX tasks_sending_id ON tasks (id) WHERE status = 'SENDING';
CREATE INDEX tasks_dead_id ON tasks (id) WHERE status = 'DEAD';
CREATE INDEX tasks_failed_id ON tasks (id) WHERE status = 'FAILED';
CREATE INDEX tasks_suppressed_id ON tasks (id) WHERE status = 'SUPPRESSED';
DROP INDEX tasks_status_id;
DROP INDEX tasks_status_next_attempt;

-- A message's tasks share its business key, the prefix of the unique key index:
-- GET /v1/messages/{id} finds them through that index.
DROP INDEX tasks_message;
