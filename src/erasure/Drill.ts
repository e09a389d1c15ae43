/**
 * `drill` (§9.4): walks the tenant's cases and classifies each artifact, telling erasure apart
 * from loss:
 * - **present**: blob bytes match their digest; sealed state opens; the case's key is live;
 * - **erased** (by design): a blob's tombstone; a destroyed key, and state sealed under it;
 * - **finding**: gone with no erasure to explain it: a linked blob with neither bytes nor a
 *   tombstone, bytes that do not match their digest, sealed state whose key the ring never had
 *   or that does not authenticate.
 *
 * It reads the stores undecorated (state as stored) and writes nothing. Decision: a case whose
 * key the ring never made, and whose state is not sealed, reports no key artifact: nothing was
 * ever sealed for it, so there is nothing to be present or erased.
 */
import { Effect, Either, Option } from "effect"
import type { CaseId } from "../domain/Ids.js"
import { Tenant } from "../domain/Tenant.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import { BlobStore } from "../services/BlobStore.js"
import { CaseStore } from "../services/CaseStore.js"
import { KeyRing } from "../services/KeyRing.js"
import * as Sealed from "./Sealed.js"

export type Verdict = "present" | "erased" | "finding"

export interface Artifact {
  readonly case: CaseId
  /** `blob:<digest>`, `state` or `key`. */
  readonly artifact: string
  readonly verdict: Verdict
  readonly detail: string
}

export interface DrillReport {
  readonly cases: number
  readonly present: number
  readonly erased: number
  readonly findings: ReadonlyArray<Artifact>
}

const PAGE = 256

/** Classifies every artifact of every case of the tenant, handing each to `onArtifact` as it goes. */
export const drill = (
  onArtifact: (artifact: Artifact) => Effect.Effect<void> = () => Effect.void,
): Effect.Effect<DrillReport, Backend | Corrupt, Tenant | CaseStore | BlobStore> =>
  Effect.gen(function* () {
    const cases = yield* CaseStore
    const blobs = yield* BlobStore
    const ring = yield* Effect.serviceOption(KeyRing)
    const tenant = yield* Tenant
    let count = 0
    let present = 0
    let erased = 0
    const findings: Array<Artifact> = []
    const note = (artifact: Artifact) =>
      Effect.suspend(() => {
        if (artifact.verdict === "present") present++
        else if (artifact.verdict === "erased") erased++
        else findings.push(artifact)
        return onArtifact(artifact)
      })

    let after = Option.none<CaseId>()
    for (;;) {
      const page = yield* cases.cases(after, PAGE)
      for (const kase of page) {
        count++
        const at = (artifact: string, verdict: Verdict, detail: string) =>
          note({ case: kase.id, artifact, verdict, detail })
        for (const digest of yield* cases.blobsOf(kase.id)) {
          const name = `blob:${digest}`
          yield* blobs.get(digest).pipe(
            Effect.flatMap(
              Option.match({
                onSome: () => at(name, "present", "bytes match their digest"),
                onNone: () => at(name, "finding", "linked to the case, but neither bytes nor a tombstone"),
              }),
            ),
            Effect.catchTags({
              BlobExpired: (e) => at(name, "erased", `tombstone: expired at ${e.at} (${e.reason})`),
              Corrupt: (e) => at(name, "finding", e.detail),
            }),
          )
        }
        if (Option.isNone(ring)) continue
        const keys = ring.value
        const sealed = Sealed.isSealed(kase.state) ? Option.some(kase.state) : Option.none<string>()
        if (Option.isSome(sealed)) {
          const scope = Either.getOrElse(Sealed.scopeOf(sealed.value), () => kase.id as string)
          yield* keys.open(scope).pipe(
            Effect.flatMap((key) =>
              Either.match(Sealed.open(tenant, key.key, sealed.value), {
                onLeft: (detail) => at("state", "finding", `sealed state does not open: ${detail}`),
                onRight: () => at("state", "present", "sealed state opens"),
              }),
            ),
            Effect.catchTags({
              Destroyed: (e) => at("state", "erased", `sealed under a destroyed key: ${e.message}`),
              KeyUnknown: (e) => at("state", "finding", e.message),
              KekMismatch: (e) => at("state", "finding", e.message),
              Corrupt: (e) => at("state", "finding", e.detail),
            }),
          )
        }
        yield* keys.open(kase.id).pipe(
          Effect.flatMap(() => at("key", "present", "the case's key is live")),
          Effect.catchTags({
            Destroyed: (e) => at("key", "erased", e.message),
            KeyUnknown: (e) => (Option.isSome(sealed) ? at("key", "finding", e.message) : Effect.void),
            KekMismatch: (e) => at("key", "finding", e.message),
            Corrupt: (e) => at("key", "finding", e.detail),
          }),
        )
      }
      const last = page[page.length - 1]
      if (page.length < PAGE || last === undefined) break
      after = Option.some(last.id)
    }
    return { cases: count, present, erased, findings }
  })
