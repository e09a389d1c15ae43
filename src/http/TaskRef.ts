/**
 * A task id on the wire: `task_<hex>` or the hex on the way in, `task_<hex>` on the way out. Its
 * own module because both `Wire` and `PolicyDecision` (which `Wire` uses) show task ids.
 */
import { Either, ParseResult, Schema } from "effect"
import * as TaskId from "../domain/TaskId.js"

export const TaskRef = Schema.transformOrFail(Schema.String, Schema.typeSchema(TaskId.TaskId), {
  strict: true,
  decode: (input, _, ast) =>
    Either.match(TaskId.parse(input), {
      onLeft: (e) => ParseResult.fail(new ParseResult.Type(ast, input, e.message)),
      onRight: ParseResult.succeed,
    }),
  encode: (id) => ParseResult.succeed(TaskId.show(id)),
}).annotations({ identifier: "TaskRef", jsonSchema: { type: "string", pattern: "^(task_)?[0-9a-f]{64}$" } })
