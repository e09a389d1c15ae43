/**
 * The log's latest checkpoint as the operator surfaces answer it (`GET /log/checkpoint`,
 * `agentplane log checkpoint`): the one stored, or, given the deployment's signing key, the
 * empty tree's, signed now and stored once (`LogStore.signEmpty`), so an auditor can keep one
 * before anything is sealed. Without a key nothing can be signed, and a log with no checkpoint
 * yet has none. A key its caller loaded signs any tenant's origin, so a failure to sign is a
 * defect of that caller, not something to answer.
 */
import { Clock, Effect, Option } from "effect"
import type { LogKey } from "../domain/LogKey.js"
import * as Time from "../domain/Time.js"
import { LogStore } from "../services/LogStore.js"

export const latestCheckpoint = (key: Option.Option<LogKey>) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    if (Option.isNone(key)) return yield* log.checkpoint()
    // `signEmpty` answers the latest checkpoint, signing the empty tree's only when there is none.
    const now = Time.fromMillis(yield* Clock.currentTimeMillis)
    return Option.some(
      yield* log.signEmpty(key.value, now).pipe(
        Effect.catchTags({
          NoteMalformed: Effect.die,
          NoteUnverified: Effect.die,
          SignatureInvalid: Effect.die,
          CheckpointMalformed: Effect.die,
        }),
      ),
    )
  })
