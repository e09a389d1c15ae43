/**
 * JournalArchive (§9.2): the journal as an export reads it, rows as stored and nothing decoded,
 * so a million records cost what reading their bytes costs. The export checks each chain and
 * body itself as it writes (`archive/Export`); this service promises only the rows' shape.
 */
import { Context, type Effect } from "effect"
import type { RunId } from "../domain/Ids.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

/** One journal row as stored: digests as their 32 bytes, the attestation's two columns as they are. */
export interface StoredRecord {
  readonly seq: number
  readonly prevHash: Uint8Array
  readonly hash: Uint8Array
  readonly raw: Uint8Array
  readonly keyId: string | null
  readonly signature: string | null
}

export class JournalArchive extends Context.Tag("agentplane/JournalArchive")<
  JournalArchive,
  {
    /** Up to `limit` of the run's rows with `seq >= from`, ascending by seq, undecoded; a row whose columns are not of their types (a seq that is no safe integer, a digest or raw that is not bytes) is `Corrupt{seq}`. */
    readonly page: (
      run: RunId,
      from: number,
      limit: number,
    ) => Effect.Effect<ReadonlyArray<StoredRecord>, Backend | Corrupt, Tenant>
  }
>() {}
