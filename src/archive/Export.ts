/**
 * Export (§9.2): a tenant's whole history as JSON Lines, streamed. Runs are paged by id and each
 * run's records by seq, cases by id, so the process holds one page at a time however large the
 * tenant is. Export never decrypts: `raw` leaves as stored, sealed payloads as ciphertext.
 *
 * A run that cannot be read in full is listed in the trailer with the first seq that could not
 * be exported and why, and the export goes on. Its records before that seq are exported, since
 * each was checked against the chain before it was written: an export only ever holds records
 * that verify, so damage in the store shows up in the trailer, not as a broken export.
 *
 * Decision: an export is not a snapshot. Each page is read in its own statement, so records
 * appended while an export runs may or may not appear; export a quiescent tenant (or accept
 * that the export shows each run as it was when that run was read).
 */
import { Chunk, Effect, Option, Stream } from "effect"
import type { Case } from "../domain/Case.js"
import * as Digest from "../domain/Digest.js"
import type { CaseId, RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { Tenant } from "../domain/Tenant.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { JournalStore } from "../services/JournalStore.js"
import * as Format from "./Format.js"

/** Runs, records and cases read per statement. */
export const PAGE = 256

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
): Stream.Stream<string, Backend | Corrupt, JournalStore | CaseStore | Tenant> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const tenant = yield* Tenant
      const journal = yield* JournalStore
      const caseStore = yield* CaseStore
      let runs = 0
      let records = 0
      let cases = 0
      const unreadable: Array<Format.Unreadable> = []

      const runIds = pages((after: Option.Option<RunId>) => journal.runs(after, PAGE))

      const recordsOf = (run: RunId) =>
        Stream.suspend(() => {
          let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
          const stop = (seq: number, detail: string) => {
            unreadable.push({ run, seq, detail })
            return Option.none<number>()
          }
          /** The page's lines up to the first record that does not continue the chain; `more` when the page was full. */
          const emit = (page: ReadonlyArray<Journal.Record>, more: boolean) => {
            const out: Array<string> = []
            for (const record of page) {
              // The store decoded the body (and named its run and seq); the chain is checked here.
              const broken = Journal.continues(record, head)
              if (broken !== undefined) return [Chunk.unsafeFromArray(out), stop(head.seq + 1, broken)] as const
              out.push(Format.recordLine(record))
              if (record.seq === 1) runs += 1
              head = { seq: record.seq, hash: record.hash }
            }
            return [Chunk.unsafeFromArray(out), more ? Option.some(head.seq + 1) : Option.none<number>()] as const
          }
          return Stream.paginateChunkEffect(1, (from: number) =>
            journal.readPage(run, from, PAGE).pipe(
              Effect.map((page) => emit(page, page.length === PAGE)),
              // A body that does not decode fails its whole page: the records before it are read
              // again without it, so the run is exported up to the damage, as the trailer says.
              Effect.catchTag("Corrupt", (e) =>
                e.seq > from
                  ? journal.readPage(run, from, e.seq - from).pipe(
                      Effect.map((page) => {
                        const [lines, next] = emit(page, false)
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

      return Stream.make(Format.headerLine(tenant)).pipe(
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
