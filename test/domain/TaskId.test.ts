import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { generateRunId, parseRunId, type RunId, StepId } from "../../src/domain/Ids.js"
import * as TaskId from "../../src/domain/TaskId.js"
import { assert } from "../support/Assert.js"

const run = (ulid: string): RunId => Either.getOrThrow(parseRunId(ulid))

const effect = EffectKey.derive({
  step: StepId.make(5),
  phase: "forward",
  ordinal: 0,
  attempt: 0,
  kind: "human.approve",
  args: { amount: 1200 },
})

const HEX = "0123456789abcdef".repeat(4)

describe("TaskId.derive", () => {
  it("is SHA-256 of the run's shown form followed by the effect key's hex, both UTF-8", () => {
    const r = run("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    expect(r).toBe("run_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    const expected = createHash("sha256")
      .update(Buffer.from(`run_01ARZ3NDEKTSV4RRFFQ69G5FAV${effect}`, "utf8"))
      .digest("hex")
    expect(TaskId.derive(r, effect)).toBe(expected)
  })

  it("does not hash the raw key bytes or the bare ULID", () => {
    const r = run("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    const overRawKey = createHash("sha256")
      .update(Buffer.from(r, "utf8"))
      .update(Buffer.from(effect, "hex"))
      .digest("hex")
    const overBareUlid = createHash("sha256").update(`01ARZ3NDEKTSV4RRFFQ69G5FAV${effect}`, "utf8").digest("hex")
    const id = TaskId.derive(r, effect)
    expect(id).not.toBe(overRawKey)
    expect(id).not.toBe(overBareUlid)
  })

  it("is deterministic: a resumed run addresses the same task", () => {
    const r = generateRunId()
    expect(TaskId.derive(r, effect)).toBe(TaskId.derive(Either.getOrThrow(parseRunId(r)), effect))
  })

  it("gives two runs with the same effect key different task ids", () => {
    const a = run("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    const b = run("01ARZ3NDEKTSV4RRFFQ69G5FAW")
    expect(TaskId.derive(a, effect)).not.toBe(TaskId.derive(b, effect))
    expect(TaskId.derive(generateRunId(), effect)).not.toBe(TaskId.derive(generateRunId(), effect))
  })

  it("gives one run's different effects different task ids", () => {
    const r = generateRunId()
    const other = EffectKey.derive({
      step: StepId.make(5),
      phase: "forward",
      ordinal: 0,
      attempt: 1,
      kind: "human.approve",
      args: { amount: 1200 },
    })
    expect(TaskId.derive(r, effect)).not.toBe(TaskId.derive(r, other))
  })

  it("is 64 lowercase hex and shown task_<hex>", () => {
    const id = TaskId.derive(generateRunId(), effect)
    expect(id).toMatch(/^[0-9a-f]{64}$/)
    expect(TaskId.show(id)).toBe(`task_${id}`)
  })
})

describe("TaskId.parse", () => {
  it("accepts bare hex", () => {
    expect(TaskId.parse(HEX)).toEqual(Either.right(HEX))
  })

  it("accepts task_<hex> and yields the hex", () => {
    expect(TaskId.parse(`task_${HEX}`)).toEqual(Either.right(HEX))
  })

  it("round-trips show", () => {
    const id = TaskId.derive(generateRunId(), effect)
    expect(TaskId.parse(TaskId.show(id))).toEqual(Either.right(id))
    expect(TaskId.parse(id)).toEqual(Either.right(id))
  })

  const refused: ReadonlyArray<readonly [string, string]> = [
    ["uppercase hex", HEX.toUpperCase()],
    ["uppercase hex with prefix", `task_${HEX.toUpperCase()}`],
    ["63 characters", HEX.slice(0, 63)],
    ["65 characters", `${HEX}0`],
    ["task_ alone", "task_"],
    ["empty", ""],
    ["non-hex", "g".repeat(64)],
    ["another prefix", `run_${HEX}`],
    ["doubled prefix", `task_task_${HEX}`],
    ["task_ with 63 characters", `task_${HEX.slice(0, 63)}`],
  ]
  for (const [label, input] of refused) {
    it(`refuses ${label}`, () => {
      const result = TaskId.parse(input)
      if (Either.isRight(result)) return assert.fail(`accepted ${JSON.stringify(input)}`)
      expect(result.left._tag).toBe("InvalidId")
      expect(result.left.input).toBe(input)
    })
  }
})
