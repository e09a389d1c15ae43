/** `--runs` for the build that recorded the runs. */
import * as Definitions from "../../../src/cli/Definitions.js"
import { orders } from "./Orders.js"

export default Definitions.make({ definitions: [orders(false)] })
