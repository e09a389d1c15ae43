/**
 * A synthetic export held to a log, made without a store so it can be as large as a test needs:
 * `runs` sealed runs of one note each, their leaves in a shuffled log order (as seals interleave
 * runs whose ids are made in another order), the records in run-id order, and a header whose
 * checkpoint, signed, commits to exactly those leaves. `lines` yields it a line at a time, so a
 * test can stream it to a file.
 */
import { Either, Option } from "effect"
import * as Format from "../../src/archive/Format.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId, type RunId, Seq, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import * as LogKey from "../../src/domain/LogKey.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"
import * as MerkleNodes from "../../src/domain/MerkleNodes.js"
import { TenantId } from "../../src/domain/Tenant.js"
import { deploymentKey } from "../conformance/log/Fixtures.js"

export const tenant = TenantId.make("t-synthetic")

const record = (run: RunId): Journal.Verbatim => {
  const raw = Journal.body({
    run,
    seq: Seq.make(1),
    case: Option.none(),
    step: StepId.make(1),
    phase: "forward",
    effectKey: Option.none(),
    kind: { kind: "Note", text: `the one note of ${run}` },
  })
  return {
    run,
    seq: Seq.make(1),
    prevHash: Digest.ZERO,
    hash: Digest.chain(Digest.ZERO, raw),
    raw,
    attestation: Option.none(),
  }
}

/** A deterministic shuffle (a linear congruential generator), so a failure reproduces. */
const shuffled = (n: number): Array<number> => {
  const order = Array.from({ length: n }, (_, i) => i)
  let state = 12_345
  for (let i = n - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    const j = state % (i + 1)
    const t = order[i] as number
    order[i] = order[j] as number
    order[j] = t
  }
  return order
}

export interface Synthetic {
  /** The run ids in id order. */
  readonly runs: ReadonlyArray<RunId>
  /** The log position of each run, by its place in `runs`. */
  readonly positions: ReadonlyArray<number>
  readonly verifier: ReturnType<typeof deploymentKey>["verifier"]
  readonly lines: () => Generator<string>
}

export const make = (n: number): Synthetic => {
  const runs = Array.from({ length: n }, () => generateRunId()).sort()
  const records = runs.map(record)
  // Position p holds run order[p].
  const order = shuffled(n)
  const positions: Array<number> = new Array(n)
  for (const [p, r] of order.entries()) positions[r] = p
  const leaves = order.map((r) => {
    const { run, hash } = records[r] as Journal.Verbatim
    return new LogLeaf.LogLeaf({ run, chainHead: hash, records: 1, outcome: "succeeded" })
  })
  const { root } = MerkleNodes.integrate(0, [], leaves.map(LogLeaf.hash))
  const { key, verifier } = deploymentKey()
  const note = Either.getOrThrow(LogKey.sign(key, tenant, n, root))
  return {
    runs,
    positions,
    verifier,
    lines: function* () {
      yield Format.headerLine(tenant, note)
      for (const [p, leaf] of leaves.entries()) yield Format.leafLine(p, leaf)
      for (const r of records) yield Format.recordLine(r)
      yield Format.endLine({ runs: n, records: n, cases: 0, unreadable: [] })
    },
  }
}
