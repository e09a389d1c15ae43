/**
 * The transparency log's answers as JSON (§6.5), one shape for `GET /log/...` and `agentplane
 * log ...`: hashes in lowercase hex, a leaf as its canonical bytes in base64 (what its leaf hash
 * is taken over, so an auditor hashes exactly what they decode), a checkpoint as its signed note.
 */

import type { Digest } from "../domain/Digest.js"
import * as LogLeaf from "../domain/LogLeaf.js"
import * as Time from "../domain/Time.js"
import type { Inclusion, StoredCheckpoint } from "../services/LogStore.js"

export const checkpoint = (cp: StoredCheckpoint) => ({
  size: cp.size,
  root: cp.root,
  note: cp.note,
  signedAt: Time.toRfc3339(cp.signedAt),
})

export const inclusion = (i: Inclusion) => ({
  run: i.leaf.run,
  index: i.index,
  size: i.size,
  leaf: Buffer.from(LogLeaf.encode(i.leaf)).toString("base64"),
  leafHash: LogLeaf.hash(i.leaf),
  proof: i.proof,
})

export const consistency = (from: number, to: number, proof: ReadonlyArray<Digest>) => ({ from, to, proof })
