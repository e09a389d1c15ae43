/**
 * Migration `0006_elected_waits`, SQLite dialect (the other set mirrors it): a wait an event
 * has elected stays registered, marked with that event's dedup key, until the engine unsubscribes
 * it once the answer is durable (issue 16).
 *
 * Deleting the wait in the electing transaction lost the run when the process died between the
 * election and the wake: the wait was gone from `waiting` (so redelivery never saw it) and the
 * suspended run held no lease (so recovery never saw it). Kept and marked, a second event cannot
 * elect it (the pick skips marked waits) while redelivery still finds it and `claimFor` hands the
 * run its claimed event. NULL is an unelected wait. SQLite has no `ADD COLUMN IF NOT EXISTS`; the
 * Migrator applies this once.
 */
export const statements: ReadonlyArray<string> = [`ALTER TABLE subscriptions ADD COLUMN elected_event TEXT`]
