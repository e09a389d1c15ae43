/**
 * The sizes agentplane accepts, in one place, so every backend (PostgreSQL, SQLite, memory) and
 * every entry point (the HTTP API, a library caller building an `InboundEvent`) refuses the same
 * input with the same message. Each bound sits well inside the tightest backend limit it guards:
 *
 * - PostgreSQL's btree refuses an index row over ~2,700 bytes (a third of an 8 KiB page). Event
 *   ids, kinds, sources, key namespaces and values are all indexed, some together in one
 *   composite index row (`namespace, value`, `source, id`), so their sum must stay under it:
 *   512 + 1,024 + a few fixed columns fits with room to spare.
 * - SQLite binds at most 32,766 variables per statement (8,192 keys, 4 variables each, failed);
 *   PostgreSQL's bind message carries at most 65,535 parameters (16,384 keys dropped the
 *   connection). 256 keys is far inside both, and is more than any real matter carries.
 * - `CorrelationKey.dedupe` and the key-matching reads grow with the key count; 256 keeps one
 *   request's work small next to everyone else's.
 *
 * Lengths are UTF-8 bytes, not JavaScript string length, because the databases' limits are bytes
 * and one UTF-16 unit can be three bytes.
 */

/** Bytes of an event id, a source, an event kind, or a key namespace. */
export const MAX_NAME_BYTES = 512

/** Bytes of a correlation key's value (invoice numbers, e-mail addresses, URLs). */
export const MAX_KEY_VALUE_BYTES = 1_024

/** Correlation keys on one event or one case call. */
export const MAX_KEYS = 256

/**
 * Nesting levels of a JSON value (arrays and objects; a scalar is level 0). Deep enough for any
 * business payload, shallow enough that every walk of a value (the check, canonical text,
 * PostgreSQL's `jsonb`) stays far from a stack limit; serde_json's default is the same 128.
 */
export const MAX_JSON_DEPTH = 128
