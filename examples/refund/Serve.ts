/**
 * The refund for `agentplane serve --runs examples/refund/Serve.ts`: the reviewed refund (and
 * the plain one), with the simulated payment provider and ledger of `Providers.ts`, in the
 * server's memory. A deployment's module has this shape, with layers that call the real systems.
 */
import * as Providers from "./Providers.js"
import { Refund, ReviewedRefund } from "./Refund.js"

export default {
  definitions: [ReviewedRefund, Refund],
  layer: Providers.layerInMemory(),
}
