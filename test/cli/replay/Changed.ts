/** `--runs` for a later build whose second effect asks for other arguments. */
import * as Definitions from "../../../src/cli/Definitions.js"
import { orders } from "./Orders.js"

export default Definitions.make({ definitions: [orders(true)] })
