/**
 * One-line renderings of Schema parse failures for start-up refusals: an operator reads them in a
 * terminal, so each issue is `path: message`, without the schema's full type.
 */
import { type ParseResult as P, ParseResult } from "effect"

/** `digest: expected 64 lowercase hex digits; roles.0: Expected a non empty string, actual ""`. */
export const format = (error: P.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`))
    .join("; ")
