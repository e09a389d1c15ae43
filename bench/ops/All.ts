/** Every measured store operation, in report order. */
import type { Op } from "../Op.js"
import { reserveRecord } from "./BatchOps.js"
import { correlateExisting, correlateNew, putState } from "./CaseOps.js"
import { accept, claimForOp } from "./EventOps.js"
import { appendPair } from "./JournalOps.js"
import { reserveRelease } from "./QuotaOps.js"
import { taskClaim } from "./TaskOps.js"
import { claimDue1, claimDue100 } from "./TimerOps.js"

export const ALL: ReadonlyArray<Op> = [
  correlateNew,
  correlateExisting,
  putState,
  accept,
  claimForOp,
  claimDue1,
  claimDue100,
  taskClaim,
  reserveRecord,
  reserveRelease,
  appendPair,
]
