import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Tenant from "../../src/domain/Tenant.js"
import type { TenantError } from "../../src/errors/TenantError.js"
import { assert } from "../support/Assert.js"

const refused = (input: string): TenantError => {
  const result = Tenant.parse(input)
  if (Either.isRight(result)) return assert.fail(`expected ${JSON.stringify(input)} to be refused, got ${result.right}`)
  return result.left
}

const accepted = (input: string): Tenant.TenantId => {
  const result = Tenant.parse(input)
  if (Either.isLeft(result))
    return assert.fail(`expected ${JSON.stringify(input)} to be accepted: ${result.left.message}`)
  return result.right
}

describe("TenantId.parse", () => {
  it("accepts a plain name unchanged", () => {
    expect(accepted("acme")).toBe("acme")
    expect(accepted("Acme Corp. (EU) #1")).toBe("Acme Corp. (EU) #1")
  })

  it("trims surrounding whitespace, including tabs and newlines", () => {
    expect(accepted("  acme  ")).toBe("acme")
    expect(accepted("\t\nacme\r\n ")).toBe("acme")
  })

  it("keeps inner spaces", () => {
    expect(accepted("  acme  eu ")).toBe("acme  eu")
  })

  it("refuses the empty string as Empty", () => {
    const error = refused("")
    expect(error._tag).toBe("TenantError")
    expect(error.reason._tag).toBe("Empty")
    expect(error.input).toBe("")
  })

  it("refuses whitespace-only input as Empty", () => {
    for (const input of [" ", "   ", "\t", "\n", " \t\r\n "]) {
      expect(refused(input).reason._tag, JSON.stringify(input)).toBe("Empty")
    }
  })

  const barred: ReadonlyArray<readonly [string, string]> = [
    ["slash", "/"],
    ["colon", ":"],
    ["NUL", "\u0000"],
    ["newline", "\n"],
    ["carriage return", "\r"],
    ["tab", "\t"],
    ["unit separator", "\u001f"],
    ["escape", "\u001b"],
    ["DEL", "\u007f"],
    ["NEL (U+0085)", "\u0085"],
    ["C1 U+009F", "\u009f"],
  ]

  for (const [label, char] of barred) {
    it(`refuses an inner ${label} as Separator naming it`, () => {
      const error = refused(`acme${char}eu`)
      expect(error.reason).toEqual({ _tag: "Separator", char })
      expect(error.input).toBe(`acme${char}eu`)
    })
  }

  it("refuses a separator at the edge that trimming does not remove", () => {
    expect(refused("acme/ ").reason).toEqual({ _tag: "Separator", char: "/" })
    expect(refused(" :acme").reason).toEqual({ _tag: "Separator", char: ":" })
  })

  it("refuses a key-scope-shaped name", () => {
    expect(refused("acme/tenant").reason._tag).toBe("Separator")
    expect(refused("acme:tenant").reason._tag).toBe("Separator")
  })

  it("accepts exactly 64 ASCII bytes and refuses 65 as TooLong", () => {
    expect(accepted("a".repeat(64))).toBe("a".repeat(64))
    expect(refused("a".repeat(65)).reason._tag).toBe("TooLong")
  })

  it("counts UTF-8 bytes, not characters: 32 × é (64 bytes) is fine, 33 × é (66 bytes) is too long", () => {
    expect(Buffer.byteLength("é".repeat(32), "utf8")).toBe(64)
    expect(accepted("é".repeat(32))).toBe("é".repeat(32))
    expect(refused("é".repeat(33)).reason._tag).toBe("TooLong")
  })

  it("counts UTF-8 bytes, not UTF-16 units: 16 × 😀 (64 bytes) is fine, 17 (68 bytes) is too long", () => {
    expect(accepted("😀".repeat(16))).toBe("😀".repeat(16))
    expect(refused("😀".repeat(17)).reason._tag).toBe("TooLong")
  })

  it("counts three-byte characters: a + 21 × € is 64 bytes, a + 22 × € is 67", () => {
    expect(accepted(`a${"€".repeat(21)}`)).toBe(`a${"€".repeat(21)}`)
    expect(refused(`a${"€".repeat(22)}`).reason._tag).toBe("TooLong")
  })

  it("measures the length after trimming", () => {
    expect(accepted(`   ${"a".repeat(64)}   `)).toBe("a".repeat(64))
  })

  it("gives readable messages", () => {
    for (const error of [refused(""), refused("a/b"), refused("a".repeat(65))]) {
      expect(error.message.length).toBeGreaterThan(10)
      expect(error.message).not.toContain("[object")
      expect(error.message).not.toBe("An error has occurred")
    }
    expect(refused("").message).toMatch(/empty/i)
    expect(refused("a:b").message).toContain(":")
    expect(refused("a".repeat(65)).message).toContain("64")
  })
})

describe("TenantId.DEFAULT", () => {
  it('is "default"', () => {
    expect(Tenant.DEFAULT).toBe("default")
  })

  it("is itself a valid tenant name", () => {
    expect(accepted("default")).toBe(Tenant.DEFAULT)
  })
})

describe("Tenant service", () => {
  it('is the context tag "agentplane/Tenant"', () => {
    expect(Tenant.Tenant.key).toBe("agentplane/Tenant")
  })

  it.effect("yields the tenant it was provided with", () =>
    Effect.gen(function* () {
      const tenant = yield* Tenant.Tenant
      expect(tenant).toBe("acme")
    }).pipe(Effect.provideService(Tenant.Tenant, accepted("acme"))),
  )
})
