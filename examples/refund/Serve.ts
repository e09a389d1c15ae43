/**
 * The refund for `agentplane serve --runs examples/refund/Serve.ts`: the reviewed refund, the
 * claimed one (its amount named by an event) and the plain one, with the simulated payment
 * provider and ledger of `Providers.ts`, in the server's memory. A deployment's module has this
 * shape, with layers that call the real systems.
 */
import { ClaimedRefund } from "./ClaimedRefund.js"
import * as Providers from "./Providers.js"
import { Refund, ReviewedRefund } from "./Refund.js"

export default {
  definitions: [ReviewedRefund, ClaimedRefund, Refund],
  layer: Providers.layerInMemory(),
}
