/**
 * Exactly one module of src/ loads `@cedar-policy/cedar-wasm` at run time: `policy/CedarBindings`,
 * whose memo keeps one instance per process (its comment says why). Every path to Cedar, `policy
 * check` (`cli/Policy` → `PolicyEngineCedar`, `Roles`), `serve`'s routes (`CedarAuthorizer` →
 * the engine) and the runs (the same engine), goes through it, so no path can call the bindings
 * unmemoised. Read with the TypeScript parser: a type-only import is erased at build and loads
 * nothing; any other mention of the package (an import, a re-export, a `require`, a dynamic
 * `import()`, a string kept for later) counts as a load.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const SRC = join(import.meta.dirname, "..", "..", "src")
const PACKAGE = "@cedar-policy/cedar-wasm"
const THE_LOADER = "policy/CedarBindings.ts"

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  )

/** Whether an import or export declaration is erased at build: `import type`, or every named binding a type. */
const typeOnly = (node: ts.ImportDeclaration | ts.ExportDeclaration): boolean => {
  if (ts.isExportDeclaration(node)) return node.isTypeOnly
  const clause = node.importClause
  if (clause === undefined) return false
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  )
}

/** The places in `text` that name the package other than in a type-only import: each a load. */
const loadsIn = (file: string, text: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Array<string> = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && typeOnly(node)) return
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && node.text.includes(PACKAGE)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart())
      found.push(`${file}:${line + 1}`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe("cedar-wasm is loaded in one place", () => {
  it("src/ names the package outside a type-only import in policy/CedarBindings.ts alone, once", () => {
    const loads = sources(SRC).flatMap((path) => loadsIn(relative(SRC, path), readFileSync(path, "utf8")))
    expect(loads.map((l) => l.replace(/:\d+$/, ""))).toEqual([THE_LOADER])
  })

  it("counts every way of loading it, and not a type-only import", () => {
    const cases: ReadonlyArray<readonly [string, number]> = [
      [`import type * as C from "${PACKAGE}/nodejs"`, 0],
      [`import { type A, type B } from "${PACKAGE}/nodejs"`, 0],
      [`export type { A } from "${PACKAGE}/nodejs"`, 0],
      [`import * as C from "${PACKAGE}/nodejs"`, 1],
      [`import { type A, b } from "${PACKAGE}/nodejs"`, 1],
      [`import "${PACKAGE}/nodejs"`, 1],
      [`export { b } from "${PACKAGE}/nodejs"`, 1],
      [`const c = createRequire(import.meta.url)("${PACKAGE}/nodejs")`, 1],
      [`const c = await import("${PACKAGE}")`, 1],
      [`const c = require(\`${PACKAGE}/nodejs\`)`, 1],
      [`const NAME = "${PACKAGE}/nodejs"`, 1],
    ]
    for (const [text, n] of cases) expect([text, loadsIn("case.ts", text).length]).toEqual([text, n])
  })

  it("the loader answers one instance however often it is asked", async () => {
    const CedarBindings = await import("../../src/policy/CedarBindings.js")
    expect(CedarBindings.bindings()).toBe(CedarBindings.bindings())
  })
})
