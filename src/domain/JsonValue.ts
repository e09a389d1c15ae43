/**
 * A JSON value as agentplane holds it. Its own module so the strict text parser (`JsonText`) and
 * the schema with its checks (`Json`) can both name it without importing each other.
 */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
