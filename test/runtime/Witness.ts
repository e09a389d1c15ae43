/**
 * The battery-wide check of §7.11 "announce before every act": every runtime the battery builds
 * (`Support.runtime`, `Support.runtimeOver`) journals through a store that notes each
 * `EffectStarted` once its commit has returned, and traces through a tracer that looks, when an
 * act's span opens, whether that act's announcement was already noted. An act that begins before
 * its announcement is durable (a read whose `EffectStarted` rides with a later commit, say) is a
 * breach; `Battery` asserts after every test that there were none.
 *
 * The act is seen through its `agentplane.effect` span, whose `agentplane.run` and
 * `agentplane.effect_key` attributes name it: every kind acts inside that span (built-ins, model
 * and tool calls, test kinds alike), so no kind escapes the check. Keys are noted across runtimes,
 * as a resumed run's act may follow an announcement a crashed runtime of the same test made.
 */
import { Effect, Layer, Tracer } from "effect"
import type * as Journal from "../../src/domain/Journal.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import type * as Stores from "../../src/services/Stores.js"

const durable = new Set<string>()
const breaches: Array<string> = []
/** Acts checked so far: a battery in which this stays 0 would prove nothing. */
let acts = 0

const note = (run: string, appends: ReadonlyArray<Journal.Append>): void => {
  for (const a of appends) {
    if (a.kind.kind === "EffectStarted" && a.effectKey._tag === "Some") durable.add(`${run}/${a.effectKey.value}`)
  }
}

/** The breaches since the last call, and how many acts were checked; both are reset. */
export const take = (): { readonly breaches: ReadonlyArray<string>; readonly acts: number } => {
  const taken = { breaches: [...breaches], acts }
  breaches.length = 0
  acts = 0
  return taken
}

/** `stores` with its journal noting every announcement its commits made durable. */
export const noting = <E>(stores: Layer.Layer<Stores.Stores, E>): Layer.Layer<Stores.Stores, E | BackendError> =>
  Layer.merge(
    stores,
    Layer.effect(
      JournalStore,
      Effect.map(JournalStore, (j) =>
        JournalStore.of({
          ...j,
          append: (run, epoch, appends, alongside, options) =>
            Effect.tap(j.append(run, epoch, appends, alongside, options), () => note(run, appends)),
          seal: (run, epoch, outcome, appends, alongside, options) =>
            Effect.tap(j.seal(run, epoch, outcome, appends, alongside, options), () => note(run, appends ?? [])),
        }),
      ),
    ).pipe(Layer.provide(stores)),
  )

/** The tracer in place, checking each act's span as it opens. */
export const tracing: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (base) =>
    Layer.setTracer(
      Tracer.make({
        context: (f, fiber) => base.context(f, fiber),
        span: (name, parent, context, links, startTime, kind, options) => {
          const span = base.span(name, parent, context, links, startTime, kind, options)
          if (name !== "agentplane.effect") return span
          // `withSpan` sets its attributes one by one right after opening, before the act runs:
          // the run first, then the key.
          let run = ""
          const set = span.attribute.bind(span)
          span.attribute = (key: string, value: unknown) => {
            if (key === "agentplane.run") run = String(value)
            if (key === "agentplane.effect_key") {
              acts += 1
              if (!durable.has(`${run}/${String(value)}`)) {
                breaches.push(`run ${run}: effect ${String(value)} acted before its announcement was durable`)
              }
            }
            set(key, value)
          }
          return span
        },
      }),
    ),
  ),
)
