/** A `--runs` module that lists one capability twice, which `serve` refuses. */
import { Refund } from "../../../examples/refund/Refund.js"

export default { definitions: [Refund, Refund] }
