import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { Digest } from "../../src/domain/Digest.js"
import { generateRunId, Seq } from "../../src/domain/Ids.js"
import * as LogAudit from "../../src/domain/LogAudit.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"
import * as Merkle from "../../src/domain/Merkle.js"

const head = (i: number) => Digest.make(i.toString(16).padStart(64, "0"))
const leaves = Array.from(
  { length: 6 },
  (_, i) => new LogLeaf.LogLeaf({ run: generateRunId(), chainHead: head(i + 1), records: i + 1, outcome: "succeeded" }),
)
const hashes = leaves.map(LogLeaf.hash)
const root = Merkle.root(hashes)
const included = (index: number) => ({
  index,
  size: leaves.length,
  leaf: leaves[index] as LogLeaf.LogLeaf,
  proof: Merkle.inclusionPath(index, hashes),
})
const detail = (e: Either.Either<void, { readonly detail: string }>) => (Either.isLeft(e) ? e.left.detail : "")

describe("LogAudit.checkRun", () => {
  it("passes the recomputed head its leaf commits to, proved in the checkpoint's tree", () => {
    for (let i = 0; i < leaves.length; i++)
      expect(Either.isRight(LogAudit.checkRun({ seq: Seq.make(i + 1), hash: head(i + 1) }, included(i), root))).toBe(
        true,
      )
  })

  it("refuses a chain that recomputes to another head or another count than the leaf commits to", () => {
    expect(detail(LogAudit.checkRun({ seq: Seq.make(3), hash: head(9) }, included(2), root))).toMatch(
      /commits to 3 records ending at/,
    )
    expect(detail(LogAudit.checkRun({ seq: Seq.make(4), hash: head(3) }, included(2), root))).toMatch(
      /recomputes 4 ending at/,
    )
  })

  it("refuses a leaf not in the tree of the root: another root, or a path of another index", () => {
    const right = { seq: Seq.make(3), hash: head(3) }
    expect(Either.isLeft(LogAudit.checkRun(right, included(2), Merkle.root(hashes.slice(0, 5))))).toBe(true)
    expect(Either.isLeft(LogAudit.checkRun(right, { ...included(2), proof: included(3).proof }, root))).toBe(true)
  })
})
