/**
 * The rows CaseStoreSql reads, and the deadlines it builds from them: the decoding half of the
 * store, kept apart so the store's file holds its verbs.
 */
import { Option, Schema } from "effect"
import { CaseStatus } from "../../domain/Case.js"
import { Deadline, DeadlineState } from "../../domain/Deadline.js"
import { CaseId, CaseVersion, RunId } from "../../domain/Ids.js"
import * as Time from "../../domain/Time.js"
import { Count, DigestBytes, Int8, JsonText } from "./Columns.js"

export const RunRow = Schema.Struct({ case_id: CaseId, run_id: RunId })
export const NextRow = Schema.Struct({ runs_next: Int8 })
export const SeqRow = Schema.Struct({ seq: Int8 })
export const CaseRow = Schema.Struct({
  case_id: CaseId,
  kind: Schema.String,
  status: CaseStatus,
  state: JsonText,
  version: Schema.compose(Int8, CaseVersion),
  opened_at: Schema.compose(Int8, Time.Timestamp),
})
export const DeadlineRow = Schema.Struct({
  case_id: CaseId,
  name: Schema.String,
  resolved_at: Schema.compose(Int8, Time.Timestamp),
  calendar_digest: DigestBytes,
  warn_at: Schema.NullOr(Schema.compose(Int8, Time.Timestamp)),
  state: DeadlineState,
})
export const BlobRow = Schema.Struct({ digest: DigestBytes })
export const VersionRow = Schema.Struct({ version: Schema.compose(Int8, CaseVersion) })
export const CountRow = Schema.Struct({ n: Count })
export const CensusRow = Schema.Struct({
  open: Count,
  oldest: Schema.OptionFromNullOr(Schema.compose(Int8, Time.Timestamp)),
  due: Count,
})

export const toDeadline = (row: typeof DeadlineRow.Type): Deadline =>
  new Deadline({
    case: row.case_id,
    name: row.name,
    resolvedAt: row.resolved_at,
    calendarDigest: row.calendar_digest,
    warnAt: Option.fromNullable(row.warn_at),
    state: row.state,
  })
