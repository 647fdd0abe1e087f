-- herald schema, version 12 (PostgreSQL): status questions without an answer (docs/reliability.md).

-- How many status questions about a task the provider left without an answer (a timeout, an
-- error), and when the next one is due (unix microseconds; NULL: none). A task whose call or
-- receipt is in doubt is asked again after a backoff instead of being resent; these survive a
-- restart, so the channel's status_questions bound holds across crashes. A task whose
-- questions run out ends UNCONFIRMED with status_questions > 0, and is listed as a dead letter.
ALTER TABLE tasks ADD COLUMN status_questions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN next_question_at BIGINT NULL;

-- The dead-letter list reads those in id order, as it reads DEAD, FAILED and SUPPRESSED ones
-- (0007): a partial index of only them, so reconciled UNCONFIRMED tasks add no entries.
CREATE INDEX tasks_unanswered_id ON tasks (id) WHERE status = 'UNCONFIRMED' AND status_questions > 0;
