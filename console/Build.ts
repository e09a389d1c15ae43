/**
 * Builds the console (`src/http/Console.ts` serves it) into `dist/console`: the client bundled
 * and minified by esbuild into one script, beside the page, its stylesheet and its icon. `npm run build`
 * runs it after tsc; the browser tests run it first, so they never test a stale bundle.
 */
import { copyFileSync, mkdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { build as esbuild } from "esbuild"

const HERE = import.meta.dirname
const OUT = join(HERE, "..", "dist", "console")

/** Writes the three assets and answers their sizes in bytes, by file name. */
export const build = async (): Promise<Record<string, number>> => {
  mkdirSync(OUT, { recursive: true })
  await esbuild({
    entryPoints: [join(HERE, "src", "Main.ts")],
    bundle: true,
    minify: true,
    format: "esm",
    // Browsers of the last few years; nothing here needs a polyfill.
    target: "es2022",
    outfile: join(OUT, "console.js"),
    legalComments: "none",
    logLevel: "warning",
  })
  for (const file of ["index.html", "console.css", "favicon.svg"])
    copyFileSync(join(HERE, "static", file), join(OUT, file))
  return Object.fromEntries(
    ["index.html", "console.css", "console.js", "favicon.svg"].map((file) => [file, statSync(join(OUT, file)).size]),
  )
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const sizes = await build()
  console.log(
    `console: ${Object.entries(sizes)
      .map(([f, n]) => `${f} ${n} B`)
      .join(", ")}`,
  )
}
