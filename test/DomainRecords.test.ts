import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Schema } from "effect"
import * as Batch from "../src/domain/Batch.js"
import * as CorrelationKey from "../src/domain/CorrelationKey.js"
import * as Event from "../src/domain/Event.js"
import { generateRunId } from "../src/domain/Ids.js"
import * as Quota from "../src/domain/Quota.js"
import * as Task from "../src/domain/Task.js"
import { TaskId } from "../src/domain/TaskId.js"
import { TenantId } from "../src/domain/Tenant.js"
import { Timestamp } from "../src/domain/Time.js"

const event = (source: string, id: string) =>
  new Event.InboundEvent({ source, id, kind: "k", correlation: [CorrelationKey.make("doc", "1")], payload: null })

const justification = new Task.Justification({
  summary: "pay the invoice",
  proposedAction: { pay: 10 },
  confidence: Option.none(),
  cost: Option.none(),
  evidence: [],
})

const task = (over: Partial<ConstructorParameters<typeof Task.Task>[0]> = {}) =>
  new Task.Task({
    id: TaskId.make("a".repeat(64)),
    run: generateRunId(),
    case: Option.none(),
    kind: "approve",
    justification,
    candidateRoles: ["clerk"],
    assignee: Option.some("alice"),
    priority: "normal",
    state: "claimed",
    onExpiry: "deny",
    escalateTo: [],
    excludedActors: ["mallory"],
    createdAt: Timestamp.make(0),
    dueAt: Option.none(),
    ...over,
  })

const spec = (over: Partial<ConstructorParameters<typeof Task.TaskSpec>[0]> = {}) =>
  new Task.TaskSpec({
    kind: "approve",
    justification,
    candidateRoles: [],
    priority: "normal",
    deadline: Option.none(),
    onExpiry: "deny",
    escalateTo: [],
    excludedActors: [],
    allowUnattended: false,
    ...over,
  })

const spend = (tokens: number, minorUnits: number) => new Quota.Spend({ tokens, minorUnits })

describe("dedupKey", () => {
  it("is source, U+001F, id", () => {
    expect(Event.dedupKey(event("mail", "42"))).toBe("mail\u001F42")
    expect(Event.dedupKeyOf("mail", "42")).toBe(Event.dedupKey(event("mail", "42")))
  })

  it("one id from two sources is two events", () => {
    expect(Event.dedupKey(event("mail", "42"))).not.toBe(Event.dedupKey(event("webhook", "42")))
  })

  it("source and id cannot slide into each other", () => {
    expect(Event.dedupKeyOf("ab", "c")).not.toBe(Event.dedupKeyOf("a", "bc"))
  })
})

describe("stored enum strings", () => {
  const cases: ReadonlyArray<readonly [string, Schema.Schema.AnyNoContext, ReadonlyArray<string>]> = [
    ["TaskState", Task.TaskState, ["open", "claimed", "completed", "expired", "escalated"]],
    ["Priority", Task.Priority, ["low", "normal", "high", "urgent"]],
    ["OnExpiry", Task.OnExpiry, ["deny", "escalate", "proceed"]],
    ["OutcomeTag", Batch.OutcomeTag, ["succeeded", "failed", "quarantined", "suspended", "exhausted"]],
    ["Period", Quota.Period, ["monthly", "daily"]],
  ]
  for (const [name, schema, strings] of cases) {
    it(`${name} decodes every stored string and refuses an unknown one`, () => {
      for (const s of strings) expect(Schema.decodeUnknownEither(schema)(s)).toEqual(Either.right(s))
      expect(Either.isLeft(Schema.decodeUnknownEither(schema)("Open"))).toBe(true)
      expect(Either.isLeft(Schema.decodeUnknownEither(schema)(""))).toBe(true)
    })
  }

  it("every outcome maps to its stored string and back", () => {
    const outcomes: ReadonlyArray<Batch.ItemOutcome> = [
      new Batch.Succeeded(),
      new Batch.Failed({ detail: "boom" }),
      new Batch.Quarantined({ detail: "q" }),
      new Batch.Suspended({ detail: "awaiting" }),
      new Batch.Exhausted({ limit: "tokens" }),
    ]
    expect(outcomes.map(Batch.tagOf)).toEqual(["succeeded", "failed", "quarantined", "suspended", "exhausted"])
    for (const o of outcomes) expect(Batch.fromStored(Batch.tagOf(o), Batch.detailOf(o))).toEqual(Either.right(o))
    expect(Either.isLeft(Batch.fromStored("failed", Option.none()))).toBe(true)
    expect(outcomes.map(Batch.isTerminal)).toEqual([true, true, true, false, false])
  })
})

describe("Priority", () => {
  it("ranks urgent, high, normal, low", () => {
    const all: ReadonlyArray<Task.Priority> = ["low", "normal", "high", "urgent"]
    expect(all.map(Task.rank)).toEqual([3, 2, 1, 0])
  })
})

describe("mayDecide", () => {
  it("an excluded actor is refused even holding the role", () => {
    expect(Task.mayDecide(task(), "mallory", ["clerk"])).toBe(false)
  })

  it("a candidate role admits, a disjoint set refuses", () => {
    expect(Task.mayDecide(task(), "bob", ["auditor", "clerk"])).toBe(true)
    expect(Task.mayDecide(task(), "bob", ["auditor"])).toBe(false)
  })

  it("no candidate roles admits any actor not excluded", () => {
    const open = task({ candidateRoles: [] })
    expect(Task.mayDecide(open, "bob", [])).toBe(true)
    expect(Task.mayDecide(open, "mallory", [])).toBe(false)
  })
})

describe("escalate", () => {
  it("appends each missing escalation role in order, once", () => {
    const t = Task.escalate(
      task({ candidateRoles: ["clerk", "lead"], escalateTo: ["manager", "lead", "director", "manager"] }),
    )
    expect(t.candidateRoles).toEqual(["clerk", "lead", "manager", "director"])
    expect(t.state).toBe("escalated")
    expect(t.assignee).toEqual(Option.none())
    expect(t.excludedActors).toEqual(["mallory"])
  })

  it("a task open to every role stays open to every role", () => {
    const t = Task.escalate(task({ candidateRoles: [], escalateTo: ["manager"] }))
    expect(t.candidateRoles).toEqual([])
    expect(t.state).toBe("escalated")
  })
})

describe("TaskSpec.validate", () => {
  it("Proceed requires allowUnattended", () => {
    expect(Either.isLeft(Task.validate(spec({ onExpiry: "proceed" })))).toBe(true)
    expect(Either.isRight(Task.validate(spec({ onExpiry: "proceed", allowUnattended: true })))).toBe(true)
  })

  it("Escalate requires a non-empty escalateTo", () => {
    expect(Either.isLeft(Task.validate(spec({ onExpiry: "escalate" })))).toBe(true)
    expect(Either.isRight(Task.validate(spec({ onExpiry: "escalate", escalateTo: ["manager"] })))).toBe(true)
  })

  it("escalateTo with any other policy is refused", () => {
    expect(Either.isLeft(Task.validate(spec({ onExpiry: "deny", escalateTo: ["manager"] })))).toBe(true)
    expect(
      Either.isLeft(Task.validate(spec({ onExpiry: "proceed", allowUnattended: true, escalateTo: ["manager"] }))),
    ).toBe(true)
    expect(Either.isRight(Task.validate(spec()))).toBe(true)
  })

  it("refuses with InvalidTaskSpec", () => {
    const result = Task.validate(spec({ onExpiry: "escalate" }))
    expect(Either.isLeft(result) && result.left._tag).toBe("InvalidTaskSpec")
  })
})

describe("Decision.expired", () => {
  it("Proceed approves as system:unattended", () => {
    const d = Task.expired("proceed")
    expect([d.approved, d.actor, d.amendment]).toEqual([true, "system:unattended", null])
  })

  it("Deny and Escalate reject as system:expiry", () => {
    for (const policy of ["deny", "escalate"] as const) {
      const d = Task.expired(policy)
      expect([d.approved, d.actor, d.amendment]).toEqual([false, "system:expiry", null])
    }
  })
})

describe("Spend", () => {
  it("adds per unit, saturating at MAX_SAFE_INTEGER", () => {
    expect(Quota.add(spend(1, 2), spend(3, 4))).toEqual(spend(4, 6))
    const max = Number.MAX_SAFE_INTEGER
    expect(Quota.add(spend(max - 1, 5), spend(10, max))).toEqual(spend(max, max))
  })

  it("a refund floors at 0", () => {
    expect(Quota.subtract(spend(10, 3), spend(4, 5))).toEqual(spend(6, 0))
    expect(Quota.subtract(Quota.ZERO, spend(1, 1))).toEqual(Quota.ZERO)
  })
})

describe("periodKey", () => {
  const at = (iso: string) => Timestamp.make(Date.parse(iso) / 1000)

  it("is the UTC month or date", () => {
    expect(Quota.periodKey("monthly", at("2026-11-30T23:59:59Z"))).toBe("2026-11")
    expect(Quota.periodKey("daily", at("2026-11-30T23:59:59Z"))).toBe("2026-11-30")
    expect(Quota.periodKey("monthly", at("2026-12-01T00:00:00Z"))).toBe("2026-12")
    expect(Quota.periodKey("daily", at("2026-12-01T00:00:00Z"))).toBe("2026-12-01")
  })
})

describe("checkSpend", () => {
  const tenant = TenantId.make("acme")
  const quota = (tokens: Option.Option<number>, minor: Option.Option<number>) =>
    new Quota.TenantQuota({
      maxConcurrentRuns: Option.none(),
      maxTokensPerPeriod: tokens,
      maxMinorUnitsPerPeriod: minor,
      period: "monthly",
    })

  it("checks tokens first", () => {
    const result = Quota.checkSpend(tenant, "2026-11", quota(Option.some(10), Option.some(5)), spend(20, 20))
    expect(Either.isLeft(result) && [result.left.unit, result.left.spent, result.left.limit]).toEqual([
      "tokens",
      20,
      10,
    ])
  })

  it("then minor units", () => {
    const result = Quota.checkSpend(tenant, "2026-11", quota(Option.some(10), Option.some(5)), spend(9, 6))
    expect(Either.isLeft(result) && [result.left.unit, result.left.tenant, result.left.period]).toEqual([
      "minor units",
      "acme",
      "2026-11",
    ])
  })

  it("reaching a limit refuses, staying below admits", () => {
    expect(Either.isLeft(Quota.checkSpend(tenant, "p", quota(Option.some(10), Option.none()), spend(10, 0)))).toBe(true)
    expect(Either.isRight(Quota.checkSpend(tenant, "p", quota(Option.some(10), Option.some(5)), spend(9, 4)))).toBe(
      true,
    )
  })

  it("an unlimited quota admits any spend", () => {
    const max = Number.MAX_SAFE_INTEGER
    expect(Either.isRight(Quota.checkSpend(tenant, "p", Quota.unlimited, spend(max, max)))).toBe(true)
  })
})
