/**
 * `LogCheck` over more leaves than it folds at once: the root it takes at the checkpoint's size,
 * and at a kept checkpoint's size anywhere (on a batch boundary, just before or after one, inside
 * one), is RFC 9162's over the same leaves (`Merkle.root`, the definition).
 */
import { randomBytes } from "node:crypto"
import { Either, Option } from "effect"
import { describe, it } from "vitest"
import * as LogCheck from "../../src/archive/LogCheck.js"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId } from "../../src/domain/Ids.js"
import * as LogKey from "../../src/domain/LogKey.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"
import * as Merkle from "../../src/domain/Merkle.js"
import { TenantId } from "../../src/domain/Tenant.js"
import { deploymentKey } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"

const SIZE = 2_500

const leaves = Array.from(
  { length: SIZE },
  () =>
    new LogLeaf.LogLeaf({
      run: generateRunId(),
      chainHead: Either.getOrThrow(Digest.fromBytes(randomBytes(32))),
      records: 3,
      outcome: "succeeded",
    }),
)
const hashes = leaves.map(LogLeaf.hash)
const { key, verifier } = deploymentKey()
const tenant = TenantId.make("t-logcheck")
const noteAt = (size: number) => Either.getOrThrow(LogKey.sign(key, tenant, size, Merkle.root(hashes.slice(0, size))))

/** The log check fed the header and every leaf; the records are listed unreadable, so only the log is held. */
const checked = (kept: number) => {
  const check = LogCheck.make({ kept: Either.getOrThrow(Checkpoint.open(noteAt(kept), [verifier])) })
  assert.isTrue(Either.isRight(check.header(noteAt(SIZE))))
  for (const [i, leaf] of leaves.entries()) assert.isTrue(Either.isRight(check.leaf(i, leaf, i + 2)))
  return check.finish(leaves.map((l) => ({ run: l.run })))
}

describe("LogCheck over many leaves", () => {
  it("takes the checkpoint's root and a kept checkpoint's at any size", () => {
    for (const kept of [1, 1_023, 1_024, 1_025, 1_500, 2_048, 2_049, SIZE]) {
      const result = checked(kept)
      assert.isTrue(Either.isRight(result), `kept at ${kept}: ${Either.isLeft(result) ? result.left.message : ""}`)
      if (Either.isRight(result))
        assert.deepStrictEqual(
          Option.flatMap(result.right, (r) => r.kept),
          Option.some({ size: kept, root: Merkle.root(hashes.slice(0, kept)), added: SIZE - kept }),
        )
    }
  })
})
