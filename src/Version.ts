/**
 * The package's version, one constant for the CLI's `--version` and the OpenAPI document's
 * `info.version`. A test checks it against package.json, which a built package may not be able to
 * read from where its modules end up.
 */
export const VERSION = "0.1.0"
