/**
 * `GET /log/checkpoint`, `/log/inclusion`, `/log/consistency` on each backend (§6.5): what an
 * auditor fetches with curl verifies offline (the note under the verifier key, the proofs with
 * RFC 9162's checks); a size left out is the latest; each refusal has its status; another
 * tenant's log is its own; a caller without `api:log.read` is 403.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import { Digest } from "../../src/domain/Digest.js"
import { generateRunId } from "../../src/domain/Ids.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as MerkleProof from "../../src/domain/MerkleProof.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { deploymentKey, NOW, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

// biome-ignore lint/suspicious/noExplicitAny: the answer is plain JSON, read by path.
type Json = any

for (const backend of Http.backends()) {
  describe(`http transparency log (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("a signing server answers a fresh log with the empty tree's checkpoint, which later ones extend", () =>
        Effect.gen(function* () {
          const { key, verifier } = deploymentKey()
          yield* Http.withServer(
            (f) =>
              Effect.gen(function* () {
                const fresh = yield* f.raw("GET", "/log/checkpoint", { as: "rita" })
                assert.strictEqual(fresh.status, 200)
                const kept = fresh.json as Json
                const zero = Either.getOrThrow(Checkpoint.open(kept.note, [verifier]))
                assert.deepStrictEqual(
                  [zero.size, zero.root, kept.size, kept.root],
                  [0, Merkle.EMPTY_ROOT, 0, Merkle.EMPTY_ROOT],
                )
                // Stored once: asked again, and by the store, it is the same note.
                assert.deepStrictEqual((yield* f.raw("GET", "/log/checkpoint", { as: "rita" })).json, kept)
                const stored = yield* f.inTenant(Effect.flatMap(LogStore, (log) => log.checkpointAt(0)))
                assert.strictEqual(Option.getOrThrow(stored).note, kept.note)
                // Proofs against the kept size-0 tree: nothing to include, an empty proof to extend it.
                const con0 = (yield* f.raw("GET", "/log/consistency?from=0", { as: "rita" })).json as Json
                assert.deepStrictEqual([con0.from, con0.to, con0.proof], [0, 0, []])
                // Tenant B's log gets its own, under its own origin.
                const other = (yield* f.raw("GET", "/log/checkpoint", { as: "bob" })).json as Json
                const otherOpened = Either.getOrThrow(Checkpoint.open(other.note, [verifier]))
                assert.deepStrictEqual(otherOpened.size, 0)
                assert.notStrictEqual(otherOpened.origin, zero.origin)

                yield* f.inTenant(
                  Effect.gen(function* () {
                    const store = yield* JournalStore
                    for (let i = 0; i < 3; i++) yield* sealed(store, i)
                    yield* Effect.flatMap(LogStore, (log) => log.integrate(key, NOW, 10))
                  }),
                )
                const next = (yield* f.raw("GET", "/log/checkpoint", { as: "rita" })).json as Json
                const three = Either.getOrThrow(Checkpoint.open(next.note, [verifier]))
                assert.strictEqual(three.size, 3)
                const con = (yield* f.raw("GET", "/log/consistency?from=0", { as: "rita" })).json as Json
                assert.deepStrictEqual([con.from, con.to], [0, 3])
                const extended = MerkleProof.verifyExtends(0, 3, con.proof, zero.root, three.root)
                assert.isTrue(Either.isRight(extended), String(extended))
                // A kept checkpoint that is not the empty tree's is refused from 0.
                const forged = MerkleProof.verifyExtends(0, 3, con.proof, three.root, three.root)
                assert.isTrue(Either.isLeft(forged))
              }),
            { logKey: key },
          )
        }),
      )

      it.effect("the checkpoint and proofs an auditor fetches verify offline; refusals have their statuses", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const { key, verifier } = deploymentKey()
            // A server without the log key signs nothing: an empty log has no checkpoint there.
            const none = yield* f.raw("GET", "/log/checkpoint", { as: "rita" })
            assert.deepStrictEqual([none.status, (none.json as Json)._tag], [404, "NotFound"])
            // The first integration call, with nothing sealed, signs the empty tree: 200 at size 0.
            yield* f.inTenant(Effect.flatMap(LogStore, (log) => log.integrate(key, NOW, 10)))
            const empty = yield* f.raw("GET", "/log/checkpoint", { as: "rita" })
            assert.strictEqual(empty.status, 200)
            const zero = Either.getOrThrow(Checkpoint.open((empty.json as Json).note, [verifier]))
            assert.deepStrictEqual([zero.size, zero.root], [0, Merkle.EMPTY_ROOT])
            const runs = yield* f.inTenant(
              Effect.gen(function* () {
                const store = yield* JournalStore
                const log = yield* LogStore
                const made = []
                for (let i = 0; i < 3; i++) made.push(yield* sealed(store, i))
                yield* log.integrate(key, NOW, 10)
                for (let i = 3; i < 5; i++) made.push(yield* sealed(store, i))
                yield* log.integrate(key, NOW, 10)
                return made
              }),
            )
            const got = yield* f.raw("GET", "/log/checkpoint", { as: "rita" })
            assert.strictEqual(got.status, 200)
            const cp = got.json as Json
            const opened = Either.getOrThrow(Checkpoint.open(cp.note, [verifier]))
            assert.deepStrictEqual([opened.size, opened.root], [5, cp.root])

            const target = runs[1]
            const inc = (yield* f.raw("GET", `/log/inclusion?run=${target?.run}`, { as: "rita" })).json as Json
            assert.deepStrictEqual([inc.index, inc.size], [1, 5])
            const ok = MerkleProof.verifyInclusion(1, 5, Digest.make(inc.leafHash), inc.proof, opened.root)
            assert.isTrue(Either.isRight(ok))
            const at3 = (yield* f.raw("GET", `/log/inclusion?run=${target?.run}&size=3`, { as: "rita" })).json as Json
            assert.strictEqual(at3.size, 3)

            const con = (yield* f.raw("GET", "/log/consistency?from=3", { as: "rita" })).json as Json
            assert.deepStrictEqual([con.from, con.to], [3, 5])
            const older = yield* f.inTenant(Effect.flatMap(LogStore, (log) => log.checkpointAt(3)))
            if (older._tag === "None") return assert.fail("no checkpoint at 3")
            const consistent = MerkleProof.verifyConsistency(3, 5, con.proof, older.value.root, opened.root)
            assert.isTrue(Either.isRight(consistent))

            const status = (path: string, as: Http.CallerName = "rita") =>
              Effect.map(f.raw("GET", path, { as }), (r) => [r.status, (r.json as Json)?._tag])
            assert.deepStrictEqual(yield* status(`/log/inclusion?run=${generateRunId()}`), [404, "RunNotLogged"])
            assert.deepStrictEqual(yield* status(`/log/inclusion?run=${target?.run}&size=9`), [422, "SizeBeyondLog"])
            assert.deepStrictEqual(yield* status(`/log/inclusion?run=${target?.run}&size=1`), [422, "RunOutsideSize"])
            assert.deepStrictEqual(yield* status("/log/consistency?from=4&to=2"), [422, "SizesUnordered"])
            assert.deepStrictEqual(yield* status("/log/consistency?from=x"), [422, "InvalidRequest"])
            const late = yield* f.inTenant(Effect.flatMap(JournalStore, (store) => sealed(store, 5)))
            assert.deepStrictEqual(yield* status(`/log/inclusion?run=${late.run}`), [409, "RunNotIntegrated"])
            // Tenant B's log is its own (empty); a producer may not read the log.
            assert.deepStrictEqual(yield* status("/log/checkpoint", "bob"), [404, "NotFound"])
            assert.deepStrictEqual(yield* status("/log/checkpoint", "pat"), [403, "Forbidden"])
          }),
        ),
      )
    })
  })
}
