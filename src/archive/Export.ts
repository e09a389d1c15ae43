/**
 * Export (§9.2): a tenant's whole history as JSON Lines, streamed. Runs are paged by id and each
 * run's records by seq, cases by id, so the process holds one page at a time however large the
 * tenant is. Export never decrypts: `raw` leaves as stored, sealed payloads as ciphertext.
 *
 * A run that cannot be read in full is listed in the trailer with the first seq that could not
 * be exported and why, and the export goes on. Its records before that seq are exported, since
 * each was checked against the chain before it was written: an export only holds records whose
 * chain verifies, so damage in the store shows up in the trailer, not as a broken export. (The
 * one exception, a payload this version cannot decode under an intact chain, is `continues`'s.)
 *
 * The records are read through `JournalArchive` when the backend provides it (rows as stored,
 * nothing decoded: 1M records at ~10,000/s), else through the store's decoded `readPage`.
 *
 * The log (§6.5): the header carries the tenant's latest signed checkpoint, read first, and the
 * leaves of every position below its size follow it (`Format`), so `verify` can hold each sealed
 * run to the leaf the log committed to. Runs sealed after that checkpoint are exported without a
 * leaf; the next export's checkpoint covers them.
 *
 * Decision: an export is not a snapshot. Each page is read in its own statement, so records
 * appended while an export runs may or may not appear; export a quiescent tenant (or accept
 * that the export shows each run as it was when that run was read).
 */
import { createHash } from "node:crypto"
import { Chunk, Effect, Option, Stream } from "effect"
import type { Case } from "../domain/Case.js"
import * as Digest from "../domain/Digest.js"
import type { CaseId, RunId, Seq } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { Tenant } from "../domain/Tenant.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { JournalArchive, type StoredRecord } from "../services/JournalArchive.js"
import { JournalStore } from "../services/JournalStore.js"
import { LogStore } from "../services/LogStore.js"
import * as Format from "./Format.js"

/** Runs and cases read per statement. */
export const PAGE = 256

/**
 * Records read per statement: one page is one chunk of lines, so this bounds what is held at
 * once. Small on purpose: at 500 a page's rows and lines outlived two scavenges and went to the
 * old generation (~3 MB per scavenge at 100k records); at 100 almost nothing is promoted.
 */
export const RECORD_PAGE = 100

/** Counts of what an export has written so far, for progress. */
export interface Written {
  readonly records: number
  readonly cases: number
}

/**
 * The export's lines, header to trailer, without line ends. `onChunk` hears the running counts
 * after each chunk of records or cases.
 */
export const lines = (
  onChunk: (written: Written) => Effect.Effect<void> = () => Effect.void,
): Stream.Stream<string, Backend | Corrupt, JournalStore | CaseStore | LogStore | Tenant> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const tenant = yield* Tenant
      const journal = yield* JournalStore
      const caseStore = yield* CaseStore
      const log = yield* LogStore
      const checkpoint = yield* log.checkpoint()
      let runs = 0
      let records = 0
      let cases = 0
      const unreadable: Array<Format.Unreadable> = []

      const runIds = pages((after: Option.Option<RunId>) => journal.runs(after, PAGE))
      // The undecoded read path when the backend has one; otherwise the store's decoded pages, as stored rows.
      const page = Option.match(yield* Effect.serviceOption(JournalArchive), {
        onSome: (archive) => archive.page,
        onNone: () => (run: RunId, from: number, limit: number) =>
          Effect.map(journal.readPage(run, from, limit), (records) => records.map(stored)),
      })

      const recordsOf = (run: RunId) =>
        Stream.suspend(() => {
          let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
          let headBytes: Uint8Array = ZERO_BYTES
          const stop = (seq: number, detail: string) => {
            unreadable.push({ run, seq, detail })
            return Option.none<number>()
          }
          /** The page's lines up to the first record that does not continue the chain; `more` when the page was full. */
          const emit = (rows: ReadonlyArray<StoredRecord>, more: boolean) => {
            const out: Array<string> = []
            for (const row of rows) {
              const broken = continues(run, row, head.seq, headBytes)
              if (broken !== undefined) return [Chunk.unsafeFromArray(out), stop(head.seq + 1, broken)] as const
              const hash = Buffer.from(row.hash.buffer, row.hash.byteOffset, row.hash.byteLength).toString(
                "hex",
              ) as Digest.Digest
              out.push(
                Format.recordLine({
                  run,
                  seq: row.seq as Seq,
                  prevHash: head.hash,
                  hash,
                  raw: row.raw,
                  attestation:
                    row.keyId !== null && row.signature !== null
                      ? Option.some(new Journal.Attestation({ keyId: row.keyId, signature: row.signature }))
                      : Option.none(),
                }),
              )
              if (row.seq === 1) runs += 1
              head = { seq: row.seq, hash }
              headBytes = row.hash
            }
            return [Chunk.unsafeFromArray(out), more ? Option.some(head.seq + 1) : Option.none<number>()] as const
          }
          return Stream.paginateChunkEffect(1, (from: number) =>
            page(run, from, RECORD_PAGE).pipe(
              Effect.map((rows) => emit(rows, rows.length === RECORD_PAGE)),
              // A row the store cannot read fails its whole page: the records before it are read
              // again without it, so the run is exported up to the damage, as the trailer says.
              Effect.catchTag("Corrupt", (e) =>
                e.seq > from
                  ? page(run, from, e.seq - from).pipe(
                      Effect.map((rows) => {
                        const [lines, next] = emit(rows, false)
                        // A chain break before the damage was already listed by `emit`.
                        return [lines, head.seq === e.seq - 1 ? stop(e.seq, e.detail) : next] as const
                      }),
                      Effect.catchTag("Corrupt", (again) =>
                        Effect.succeed([Chunk.empty<string>(), stop(again.seq || from, again.detail)] as const),
                      ),
                    )
                  : Effect.succeed([Chunk.empty<string>(), stop(e.seq > 0 ? e.seq : from, e.detail)] as const),
              ),
            ),
          )
        })

      const caseLines = pages(
        (after: Option.Option<CaseId>) => caseStore.cases(after, PAGE),
        (c: Case) => c.id,
      ).pipe(
        Stream.mapEffect((kase) =>
          Effect.map(Effect.all([caseStore.deadlines(kase.id), caseStore.blobsOf(kase.id)]), ([deadlines, blobs]) =>
            Format.caseLine({ case: kase, deadlines, blobs }),
          ),
        ),
      )

      const counting = (count: (n: number) => void) =>
        Stream.mapChunksEffect((chunk: Chunk.Chunk<string>) => {
          count(chunk.length)
          return Effect.as(onChunk({ records, cases }), chunk)
        })

      const logSize = Option.match(checkpoint, { onNone: () => 0, onSome: (c) => c.size })
      const leafLines = Stream.paginateChunkEffect(0, (from: number) =>
        log.leaves(from, Math.min(PAGE, logSize - from)).pipe(
          Effect.map((read) => {
            // A store with a hole in its positions reads past it: only what the checkpoint covers is listed.
            const page = read.filter((p) => p.index < logSize)
            const last = page[page.length - 1]
            const next = last === undefined ? logSize : last.index + 1
            return [
              Chunk.fromIterable(page.map((p) => Format.leafLine(p.index, p.leaf))),
              next < logSize ? Option.some(next) : Option.none<number>(),
            ] as const
          }),
        ),
      )

      return Stream.make(Format.headerLine(tenant, Option.getOrUndefined(Option.map(checkpoint, (c) => c.note)))).pipe(
        Stream.concat(leafLines),
        Stream.concat(
          Stream.flatMap(runIds, recordsOf).pipe(
            counting((n) => {
              records += n
            }),
          ),
        ),
        Stream.concat(
          caseLines.pipe(
            counting((n) => {
              cases += n
            }),
          ),
        ),
        Stream.concat(Stream.suspend(() => Stream.make(Format.endLine({ runs, records, cases, unreadable })))),
      )
    }),
  )

// internal

const ZERO_BYTES = Digest.toBytes(Digest.ZERO)

/**
 * Why the stored row does not continue a chain whose head is (`seq`, `prev`), or nothing: the
 * checks of `Journal.continues` on the bytes as read, and a body that is JSON naming this run
 * and seq. Decision: the body's payload is not decoded here. A record whose payload this version
 * cannot decode but whose chain holds is exported, and `verify` (which decodes every body) names
 * it; decoding a million payloads was most of an export's time and most of its garbage.
 */
const continues = (run: RunId, row: StoredRecord, seq: number, prev: Uint8Array): string | undefined => {
  if (row.prevHash.length !== 32) return `journal: prev_hash: a digest must be 32 bytes, found ${row.prevHash.length}`
  if (row.hash.length !== 32) return `journal: hash: a digest must be 32 bytes, found ${row.hash.length}`
  if (row.seq !== seq + 1) return `seq ${row.seq} does not follow ${seq}`
  if (Buffer.compare(row.prevHash, prev) !== 0) return "prev_hash is not the hash of the record before"
  if (row.raw.length > Journal.MAX_RECORD_BYTES)
    return `raw is ${row.raw.length} bytes, over the ${Journal.MAX_RECORD_BYTES}-byte limit`
  if (Buffer.compare(createHash("sha256").update(prev).update(row.raw).digest(), row.hash) !== 0)
    return "hash is not SHA-256(prev_hash ‖ raw): the bytes were changed"
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(row.raw.buffer, row.raw.byteOffset, row.raw.byteLength).toString("utf8"))
  } catch (e) {
    return `journal: body is not JSON: ${String(e)}`
  }
  const named = typeof body === "object" && body !== null ? (body as { run?: unknown; seq?: unknown }) : {}
  if (named.run !== run || named.seq !== row.seq) return "journal: body names another run or seq"
  return undefined
}

/** A decoded record as the row it was read from (the fallback read path). */
const stored = (record: Journal.Record): StoredRecord => ({
  seq: record.seq,
  prevHash: Digest.toBytes(record.prevHash),
  hash: Digest.toBytes(record.hash),
  raw: record.raw,
  keyId: Option.match(record.attestation, { onNone: () => null, onSome: (a) => a.keyId }),
  signature: Option.match(record.attestation, { onNone: () => null, onSome: (a) => a.signature }),
})

/** Every item of a keyset-paged read: `read(after)` returns up to PAGE items after the cursor, ascending. */
function pages<A, E, R>(
  read: (after: Option.Option<A>) => Effect.Effect<ReadonlyArray<A>, E, R>,
): Stream.Stream<A, E, R>
function pages<A, K, E, R>(
  read: (after: Option.Option<K>) => Effect.Effect<ReadonlyArray<A>, E, R>,
  key: (a: A) => K,
): Stream.Stream<A, E, R>
function pages<A, K, E, R>(
  read: (after: Option.Option<K>) => Effect.Effect<ReadonlyArray<A>, E, R>,
  key: (a: A) => K = (a) => a as unknown as K,
): Stream.Stream<A, E, R> {
  return Stream.paginateChunkEffect(Option.none<K>(), (after) =>
    Effect.map(read(after), (page): readonly [Chunk.Chunk<A>, Option.Option<Option.Option<K>>] => {
      const last = page[page.length - 1]
      return [
        Chunk.fromIterable(page),
        page.length < PAGE || last === undefined ? Option.none() : Option.some(Option.some(key(last))),
      ]
    }),
  )
}
