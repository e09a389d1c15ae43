/**
 * A log checkpoint in the C2SP `tlog-checkpoint` form (c2sp.org/tlog-checkpoint): the text
 *
 *     <origin>\n<tree size in decimal>\n<base64 root hash>\n[<extension line>\n ...]
 *
 * signed as a C2SP signed note (`SignedNote`). The origin names the log (deployment and
 * tenant); the size has no leading zeros (`0` for the empty tree); the root is the RFC 9162 root
 * at that size. Extension lines are optional, opaque and non-empty.
 */
import { Either, Schema } from "effect"
import { CheckpointMalformed, type NoteError } from "../errors/LogError.js"
import * as Digest from "./Digest.js"
import * as SignedNote from "./SignedNote.js"

// A line of a note: non-empty, and no control character (a newline would start another line).
const Line = Schema.String.pipe(
  Schema.filter((line) => line.length > 0 && !SignedNote.hasControl(line), {
    message: () => "a checkpoint line is non-empty and has no control character",
  }),
)

/** A log's signed statement of its size and root. */
export class Checkpoint extends Schema.Class<Checkpoint>("Checkpoint")({
  origin: Line,
  size: Schema.NonNegativeInt.pipe(Schema.filter((n) => Number.isSafeInteger(n))),
  root: Digest.Digest,
  extensions: Schema.optionalWith(Schema.Array(Line), { default: () => [] }),
}) {}

/** The note text of a checkpoint. */
export const text = (checkpoint: Checkpoint): string =>
  [
    checkpoint.origin,
    String(checkpoint.size),
    Buffer.from(Digest.toBytes(checkpoint.root)).toString("base64"),
    ...checkpoint.extensions,
  ]
    .map((line) => `${line}\n`)
    .join("")

/** The checkpoint a note text states; anything that is not exactly that form is `CheckpointMalformed`. */
export const parse = (body: string): Either.Either<Checkpoint, CheckpointMalformed> => {
  const fail = (detail: string) => Either.left(new CheckpointMalformed({ detail }))
  if (!body.endsWith("\n")) return fail("the text does not end in a newline")
  const lines = body.slice(0, -1).split("\n")
  if (lines.length < 3) return fail(`${lines.length} lines; a checkpoint has origin, size and root`)
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...Array<string>]
  if (!/^(0|[1-9][0-9]*)$/.test(size))
    return fail(`size ${JSON.stringify(size)} is not a decimal without leading zeros`)
  const n = Number(size)
  if (!Number.isSafeInteger(n)) return fail(`size ${size} is too large`)
  const bytes = Buffer.from(root, "base64")
  if (bytes.toString("base64") !== root || bytes.length !== 32)
    return fail(`root ${JSON.stringify(root)} is not the base64 of a 32-byte hash`)
  const rootDigest = Digest.fromBytes(bytes)
  if (Either.isLeft(rootDigest)) return fail(rootDigest.left)
  const decoded = decodeCheckpoint({ origin, size: n, root: rootDigest.right, extensions })
  return Either.mapLeft(decoded, (e) => new CheckpointMalformed({ detail: e.message }))
}

/** The checkpoint as a note signed by `signers` (the log's key first). */
export const sign = (
  checkpoint: Checkpoint,
  signers: ReadonlyArray<SignedNote.Signer>,
): Either.Either<string, NoteError> => SignedNote.signNote(text(checkpoint), signers)

/** The checkpoint in a signed note, if a trusted key signed it and its text is a checkpoint. */
export const open = (
  note: string | Uint8Array,
  trusted: ReadonlyArray<SignedNote.VerifierKey>,
): Either.Either<Checkpoint, NoteError | CheckpointMalformed> =>
  Either.flatMap(SignedNote.open(note, trusted), (opened) => parse(opened.text))

// internal

const decodeCheckpoint = Schema.decodeUnknownEither(Checkpoint)
