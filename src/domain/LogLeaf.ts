/**
 * The leaf a sealed run adds to its tenant's transparency log (§6.5), and its canonical bytes.
 *
 * Encoding, version 1: the ASCII domain tag `agentplane-log-leaf/1` and a newline, then the
 * RFC 8785 (JCS) text, in UTF-8, of
 *
 *     {"chain_head": <64 lowercase hex>, "outcome": <RunOutcome>, "records": <count>, "run": "run_<ULID>"}
 *
 * JCS because it is already the journal's canonical form (record bodies are hashed over it), so
 * an auditor decodes a leaf with the JSON tools they use on records; its key order and number
 * form are fixed, so one leaf has one encoding. The tag keeps a leaf from ever reading as
 * another object of this system (a record body starts with `{`), and a new encoding changes it
 * (`/2`). Leaves commit to chain heads over ciphertext (§9.1), so erasing a case changes no leaf.
 */
import { Either, Schema } from "effect"
import { LeafMalformed } from "../errors/LogError.js"
import * as Canonical from "./Canonical.js"
import { Digest } from "./Digest.js"
import { RunId } from "./Ids.js"
import { RunOutcome } from "./Journal.js"
import { leafHash } from "./Merkle.js"

/** The domain tag and version that every version-1 leaf starts with. */
export const TAG = "agentplane-log-leaf/1\n"

/** A sealed run as its log leaf commits to it: its id, chain head, number of records and outcome. */
export class LogLeaf extends Schema.Class<LogLeaf>("LogLeaf")({
  run: RunId,
  chainHead: Digest,
  // 0 for a run sealed before it wrote anything (the store seals it at the ZERO head).
  records: Schema.NonNegativeInt,
  outcome: RunOutcome,
}) {}

/** The canonical bytes of a leaf: the tag, then the JCS text of its fields. */
export const encode = (leaf: LogLeaf): Uint8Array =>
  Buffer.from(
    TAG + Canonical.text({ chain_head: leaf.chainHead, outcome: leaf.outcome, records: leaf.records, run: leaf.run }),
    "utf8",
  )

/** The leaf's RFC 9162 leaf hash: what the tree holds at its position. */
export const hash = (leaf: LogLeaf): Digest => leafHash(encode(leaf))

const Wire = Schema.Struct({ chain_head: Digest, outcome: RunOutcome, records: LogLeaf.fields.records, run: RunId })
const decodeWire = Schema.decodeUnknownEither(Wire)

/**
 * The leaf whose canonical bytes are `bytes`. Anything else is `LeafMalformed`, including JSON
 * that decodes to a leaf but is not its canonical text: one leaf, one encoding.
 */
export const decode = (bytes: Uint8Array): Either.Either<LogLeaf, LeafMalformed> => {
  const fail = (detail: string) => Either.left(new LeafMalformed({ detail }))
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
  if (!text.startsWith(TAG)) return fail(`does not start with the tag ${JSON.stringify(TAG)}`)
  let json: unknown
  try {
    json = JSON.parse(text.slice(TAG.length))
  } catch (e) {
    return fail(`the body is not JSON: ${String(e)}`)
  }
  const wire = decodeWire(json, { onExcessProperty: "error" })
  if (Either.isLeft(wire)) return fail(wire.left.message)
  const w = wire.right
  const leaf = new LogLeaf({ run: w.run, chainHead: w.chain_head, records: w.records, outcome: w.outcome })
  return Buffer.from(encode(leaf)).equals(Buffer.from(bytes)) ? Either.right(leaf) : fail("not the canonical encoding")
}
