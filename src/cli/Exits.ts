/**
 * What each verb exits with when it fails. A verb declares the errors it can fail with (its
 * command's error channel) and each maps to one exit code here; the tables are checked against
 * the commands' types, so a verb that gains a way to fail does not compile until its code is
 * chosen. A failure no table lists, and every defect, is a bug: exit `DEFECT`, reported with its
 * cause (`Report.report`).
 *
 * The codes a verb sets on success are its own and stay in its module (`sweep` 2 when it needs
 * attention, `export` 3 for a trailer that lists unread runs, `restore` 2 and 3): they are
 * results a script branches on, not failures; `replay`'s verdicts (2 and 3) are such results too.
 *
 * `verify` is not listed: its errors are reported as failures (exit `FAILED`) without a table.
 */
import type { Command } from "@effect/cli"
import { ValidationError } from "@effect/cli"
import { Cause, Exit, Option } from "effect"
import type * as Drill from "./Drill.js"
import type * as EraseCase from "./EraseCase.js"
import type * as Export from "./Export.js"
import type * as ForgetAdmissions from "./ForgetAdmissions.js"
import type * as Log from "./Log.js"
import type * as Migrate from "./Migrate.js"
import type * as Policy from "./Policy.js"
import type * as Replay from "./Replay.js"
import type * as Restore from "./Restore.js"
import type * as SeedDemo from "./SeedDemo.js"
import type * as Serve from "./Serve.js"
import type * as Sweep from "./Sweep.js"
import type * as TokenDigest from "./TokenDigest.js"

/** The verb was refused or failed as it declares (a usage error too); its one line says what to change. */
export const FAILED = 1

/** A failure the verb does not declare, or a defect: a bug (sysexits' EX_SOFTWARE). */
export const DEFECT = 70

export type Code = typeof FAILED

/** The tags of the errors `command` can fail with. */
// biome-ignore lint/suspicious/noExplicitAny: only the error parameter is read.
type TagsOf<C> = C extends Command.Command<any, any, infer E, any> ? TagOf<E> : never

/** Each member's tag (distributed over the union); an untagged member is `never`, so its table cannot list it. */
type TagOf<E> = E extends { readonly _tag: infer T extends string } ? T : never

/** One code for each error the verb declares, and no other key. */
type Table<C> = { readonly [T in TagsOf<C>]: Code }

/**
 * Each verb's errors and their codes, written out per verb: a spread's keys escape the excess
 * check, so a shared fragment could list an error the verb cannot meet.
 */
export const verbs = {
  serve: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    KekInvalid: FAILED,
    SealedWithoutKek: FAILED,
    SealedUnderOtherKek: FAILED,
    LogKeyInvalid: FAILED,
    CredentialsInvalid: FAILED,
    AddressUnavailable: FAILED,
    RunsInvalid: FAILED,
    StartRefused: FAILED,
  } satisfies Table<typeof Serve.command>,
  sweep: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    KekInvalid: FAILED,
    SealedWithoutKek: FAILED,
    SealedUnderOtherKek: FAILED,
    TenantError: FAILED,
    TenantUnknown: FAILED,
    Corrupt: FAILED,
    NoteMalformed: FAILED,
    CheckpointMalformed: FAILED,
    NoteUnverified: FAILED,
    SignatureInvalid: FAILED,
    LogKeyInvalid: FAILED,
    BundleInvalid: FAILED,
    BundleUnreadable: FAILED,
    CredentialsInvalid: FAILED,
    RunsInvalid: FAILED,
  } satisfies Table<typeof Sweep.command>,
  export: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    TenantError: FAILED,
    Corrupt: FAILED,
    BadArgument: FAILED,
    SystemError: FAILED,
  } satisfies Table<typeof Export.command>,
  restore: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    TenantError: FAILED,
    Corrupt: FAILED,
    BadArgument: FAILED,
    SystemError: FAILED,
  } satisfies Table<typeof Restore.command>,
  replay: {
    StoreInvalid: FAILED,
    KekInvalid: FAILED,
    RunsRequired: FAILED,
    RunsInvalid: FAILED,
    SinceInvalid: FAILED,
    StoreSchemaBehind: FAILED,
    TenantError: FAILED,
    BadArgument: FAILED,
    SystemError: FAILED,
    Backend: FAILED,
    Corrupt: FAILED,
    Crashed: FAILED,
  } satisfies Table<typeof Replay.command>,
  drill: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    TenantError: FAILED,
    Corrupt: FAILED,
    KekInvalid: FAILED,
  } satisfies Table<typeof Drill.command>,
  "erase-case": {
    StoreInvalid: FAILED,
    Backend: FAILED,
    KekInvalid: FAILED,
    SealedWithoutKek: FAILED,
    SealedUnderOtherKek: FAILED,
    TenantError: FAILED,
    InvalidId: FAILED,
    NotFound: FAILED,
    Corrupt: FAILED,
  } satisfies Table<typeof EraseCase.command>,
  "forget-admissions": { StoreInvalid: FAILED, Backend: FAILED, TenantError: FAILED } satisfies Table<
    typeof ForgetAdmissions.command
  >,
  migrate: { StoreInvalid: FAILED, Backend: FAILED } satisfies Table<typeof Migrate.command>,
  "token-digest": { TokenRefused: FAILED } satisfies Table<typeof TokenDigest.command>,
  "seed-demo": {
    StoreInvalid: FAILED,
    Backend: FAILED,
    KekInvalid: FAILED,
    SealedWithoutKek: FAILED,
    SealedUnderOtherKek: FAILED,
    NotFound: FAILED,
    Corrupt: FAILED,
    ObligationsOutstanding: FAILED,
    TenantInvalid: FAILED,
  } satisfies Table<typeof SeedDemo.command>,
  policy: {
    BundleInvalid: FAILED,
    BundleUnreadable: FAILED,
    RequestMalformed: FAILED,
    PolicyUnavailable: FAILED,
    PolicyInvalid: FAILED,
    MissingArgument: FAILED,
  } satisfies Table<typeof Policy.command>,
  log: {
    StoreInvalid: FAILED,
    Backend: FAILED,
    TenantError: FAILED,
    Corrupt: FAILED,
    RunNotLogged: FAILED,
    RunNotIntegrated: FAILED,
    RunOutsideSize: FAILED,
    SizeBeyondLog: FAILED,
    SizesUnordered: FAILED,
    LogKeyInvalid: FAILED,
    LogRequestIncomplete: FAILED,
  } satisfies Table<typeof Log.command>,
} as const

/** Whether `error` is one `verb` declares (or a usage error, which the CLI has already printed). */
export const isDeclared = (verb: string | undefined, error: unknown): boolean => {
  if (ValidationError.isValidationError(error)) return true
  const table = tableOf(verb)
  if (table === undefined) return true
  const tag = typeof error === "object" && error !== null ? (error as { _tag?: unknown })._tag : undefined
  return typeof tag === "string" && Object.hasOwn(table, tag)
}

/**
 * The exit code of a run of `verb` that ended with `exit`: 0 for success or interruption (SIGINT,
 * SIGTERM; a code the verb set on success is kept by the caller), the declared error's code, or
 * `DEFECT` for anything else.
 */
export const codeOf = (verb: string | undefined, exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure) || !isDeclared(verb, failure.value)) return DEFECT
  const table = tableOf(verb)
  const tag = (failure.value as { _tag?: string })._tag
  return table !== undefined && tag !== undefined && Object.hasOwn(table, tag) ? (table[tag] ?? FAILED) : FAILED
}

// internal

const tableOf = (verb: string | undefined): Readonly<Record<string, Code>> | undefined =>
  verb !== undefined && Object.hasOwn(verbs, verb)
    ? (verbs as Record<string, Readonly<Record<string, Code>>>)[verb]
    : undefined
