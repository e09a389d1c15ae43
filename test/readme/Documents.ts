/**
 * The documents whose code blocks and links are tested: README.md and every Markdown file at the
 * top of docs/ (docs/design has a check of its own), as paths from the repository's root.
 */
import { readdirSync } from "node:fs"
import { join } from "node:path"
import * as Process from "../package/Process.js"

export const all = (): ReadonlyArray<string> => [
  "README.md",
  ...readdirSync(join(Process.ROOT, "docs"), { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort(),
]
