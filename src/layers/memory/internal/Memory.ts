/**
 * What every in-memory store shares: state kept per tenant, a total order on text that matches
 * the SQL layers' (code point, never locale), JSON kept as text, and the SQL layers' limit rule.
 */
import { Effect, type Either } from "effect"
import * as Json from "../../../domain/Json.js"
import { Tenant, type TenantId } from "../../../domain/Tenant.js"

export { clampLimit } from "../../internal/Sql.js"

/**
 * A store's state, one value per tenant, created on first touch (G1: a tenant only ever reaches
 * its own). The function it returns (`atomically` at the call sites) reads the tenant from
 * context and runs `f` on its state in one synchronous step: with no yield between the read, the
 * check and the write, no other fiber can interleave, so every verb is atomic by construction.
 */
export const perTenant = <S>(init: () => S) => {
  const tenants = new Map<TenantId, S>()
  const of = (tenant: TenantId): S => {
    const found = tenants.get(tenant)
    if (found !== undefined) return found
    const fresh = init()
    tenants.set(tenant, fresh)
    return fresh
  }
  // Generic in the whole effect, so a body returning several kinds of `Effect` infers their union.
  return <X extends Effect.Effect<unknown, unknown>>(
    f: (state: S) => X,
  ): Effect.Effect<Effect.Effect.Success<X>, Effect.Effect.Error<X>, Tenant> =>
    Effect.flatMap(Tenant, (tenant) =>
      Effect.suspend(() => f(of(tenant)) as Effect.Effect<Effect.Effect.Success<X>, Effect.Effect.Error<X>>),
    )
}

/**
 * As `perTenant`, for bodies that answer with an `Either` rather than an `Effect`; `f` also gets
 * the tenant. An Either is an Effect, so the cast only names the union of its branches.
 */
export const perTenantEither = <S>(init: () => S) => {
  const tenants = new Map<TenantId, S>()
  return <X extends Either.Either<unknown, unknown>>(
    f: (state: S, tenant: TenantId) => X,
  ): Effect.Effect<Either.Either.Right<X>, Either.Either.Left<X>, Tenant> =>
    Effect.flatMap(Tenant, (tenant) =>
      Effect.suspend(() => {
        let state = tenants.get(tenant)
        if (state === undefined) {
          state = init()
          tenants.set(tenant, state)
        }
        return f(state, tenant) as unknown as Effect.Effect<Either.Either.Right<X>, Either.Either.Left<X>>
      }),
    )
}

/** Code-point order (the order of UTF-8 bytes), the order the SQL layers sort text in. */
export const compareText = (a: string, b: string): number => {
  if (a === b) return 0
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))
}

export const compareNumber = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * JSON text for a value the store keeps, or the reason it has none. Kept as text, as the SQL
 * layers keep it, so a read returns a fresh copy with the same round trip (`-0` reads `0`).
 */
export const jsonText = (value: Json.Json): Either.Either<string, string> => Json.stringify(value)

/** The value of text this store wrote itself, so it always parses. */
export const fromJsonText = (text: string): Json.Json => JSON.parse(text) as Json.Json
