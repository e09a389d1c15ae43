/**
 * The two systems the refund run changes, as services: a payment provider that deduplicates by
 * an idempotency key (as Stripe-like APIs do), and a ledger that can be asked whether an entry
 * landed. `layerInMemory` simulates both in this process, for the demo and the tests; a real
 * deployment provides layers that call the real systems.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"

/** The ledger refuses postings into a closed accounting period: a rejection, not a fault. */
export class PeriodClosed extends Schema.TaggedError<PeriodClosed>()("PeriodClosed", { period: Schema.String }) {}

export class Payments extends Context.Tag("examples/refund/Payments")<
  Payments,
  {
    /** Refunds `amountMinor` on `invoice`; the same `idempotencyKey` answers the first refund again. */
    readonly refund: (
      invoice: string,
      amountMinor: number,
      idempotencyKey: string,
    ) => Effect.Effect<{ readonly refundId: string }>
    /** Reverses a refund; idempotent by `idempotencyKey`. */
    readonly reverse: (refundId: string, idempotencyKey: string) => Effect.Effect<void>
  }
>() {}

export class Ledger extends Context.Tag("examples/refund/Ledger")<
  Ledger,
  {
    /** Posts the refund under `reference`; `PeriodClosed` if the period is closed. */
    readonly post: (reference: string, amountMinor: number) => Effect.Effect<{ readonly entry: string }, PeriodClosed>
    /** The entry posted under `reference`, if one landed. */
    readonly find: (reference: string) => Effect.Effect<Option.Option<{ readonly entry: string }>>
  }
>() {}

/** What the simulated systems did, for a demo to print and a test to count. */
export interface Tally {
  /** Every call of `refund` that reached the provider, duplicates included. */
  refundCalls: number
  readonly refunds: Map<string, { readonly refundId: string; readonly amountMinor: number; reversed: boolean }>
  readonly entries: Map<string, { readonly entry: string; readonly amountMinor: number }>
}

export const tally = (): Tally => ({ refundCalls: 0, refunds: new Map(), entries: new Map() })

/** Both systems in memory, recording into `into`; `periodClosed` makes every posting a rejection. */
export const layerInMemory = (
  into: Tally = tally(),
  options: { readonly periodClosed?: boolean } = {},
): Layer.Layer<Payments | Ledger> =>
  Layer.merge(
    Layer.succeed(
      Payments,
      Payments.of({
        refund: (invoice, amountMinor, idempotencyKey) =>
          Effect.sync(() => {
            into.refundCalls += 1
            const known = into.refunds.get(idempotencyKey)
            if (known !== undefined) return { refundId: known.refundId }
            const refundId = `re_${invoice}_${idempotencyKey.slice(0, 8)}`
            into.refunds.set(idempotencyKey, { refundId, amountMinor, reversed: false })
            return { refundId }
          }),
        reverse: (refundId) =>
          Effect.sync(() => {
            for (const r of into.refunds.values()) if (r.refundId === refundId) r.reversed = true
          }),
      }),
    ),
    Layer.succeed(
      Ledger,
      Ledger.of({
        post: (reference, amountMinor) =>
          Effect.suspend(() => {
            if (options.periodClosed === true) return Effect.fail(new PeriodClosed({ period: "2026-11" }))
            const entry = into.entries.get(reference) ?? { entry: `le_${reference.slice(-8)}`, amountMinor }
            into.entries.set(reference, entry)
            return Effect.succeed({ entry: entry.entry })
          }),
        find: (reference) =>
          Effect.sync(() => Option.map(Option.fromNullable(into.entries.get(reference)), (e) => ({ entry: e.entry }))),
      }),
    ),
  )
