-- herald schema, version 9 (SQLite): cost-aware escalation (docs/policy.md).

-- 1 on a task a route's escalation step created: it waits for its send_at and is sent only if
-- no task of its message was READ (or CLICKED) by then; else it becomes SUPPRESSED with
-- policy_reason 'read_before_escalation', in the transaction that would have marked it SENDING.
-- Its send_at is its own time (the message's send time, plus what policy held the route's other
-- tasks back, plus the step's delay).
ALTER TABLE tasks ADD COLUMN escalation INTEGER NOT NULL DEFAULT 0;

-- The cap windows an escalation step was counted in when it was admitted, as JSON
-- [[counter, window_start], ...]: given back when a read suppresses the step. NULL otherwise.
ALTER TABLE tasks ADD COLUMN counted_json TEXT NULL;
