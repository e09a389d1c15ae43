/**
 * The package as a user gets it (issue 17's acceptance): `npm pack`, the tarball installed into a
 * fresh project, and there `npx agentplane serve` on the embedded SQLite default, with plain node.
 *
 * How the fresh project installs, decided: `npm ci --prefer-offline --ignore-scripts` from a
 * lockfile made of the tarball and this repository's own production entries of package-lock.json.
 * - The versions are the ones this repository is tested with, not whatever the registry serves
 *   today, so the test fails only for a packaging fault, never for a dependency's new release.
 * - Everything comes from npm's cache, which the repository's `npm ci` filled; a package missing
 *   there is fetched (prefer-offline), so the test does not depend on how the cache was filled.
 * - `--ignore-scripts`: the one production dependency with an install script is better-sqlite3,
 *   which compiles SQLite for ~90 s (no prebuilt binary is reachable offline). Its compiled
 *   addon is copied from this repository's node_modules, built by `npm ci` for this very node.
 * The server is started through `npx`, as a user would, and stopped by SIGTERM to npx's pid.
 * Every export the README documents loads from the tarball, from CommonJS as `npm init -y` makes.
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs"
import { join } from "node:path"
import { describe, inject, it } from "vitest"
import * as Blocks from "../readme/Blocks.js"
import { assert } from "../support/Assert.js"
import * as Process from "./Process.js"

/** Every value the README's ts blocks import from "agentplane" (type-only names left out). */
const readmeImports = (): ReadonlyArray<string> =>
  Blocks.parse(readFileSync(join(Process.ROOT, "README.md"), "utf8"))
    .filter((block) => block.lang === "ts")
    .flatMap((block) => [...block.text.matchAll(/import\s*\{([^}]*)\}\s*from\s*"agentplane"/g)])
    .flatMap((match) => (match[1] ?? "").split(","))
    .map((name) => name.trim())
    .filter((name) => name !== "" && !name.startsWith("type "))

const REVIEWER = "demo-reviewer-token"

interface Lock {
  readonly packages: Record<string, { readonly dev?: boolean }>
}

interface Manifest {
  readonly version: string
  readonly license: string
  readonly dependencies: Record<string, string>
  readonly bin: Record<string, string>
  readonly engines: Record<string, string>
}

/** A new project in `dir` whose one dependency is the tarball `file`, locked to this repository's versions. */
const freshProject = (dir: string, file: string, integrity: string) => {
  const manifest = JSON.parse(readFileSync(join(Process.ROOT, "package.json"), "utf8")) as Manifest
  const lock = JSON.parse(readFileSync(join(Process.ROOT, "package-lock.json"), "utf8")) as Lock
  const production = Object.entries(lock.packages).filter(([path, entry]) => path !== "" && entry.dev !== true)
  const dependencies = { agentplane: `file:${file}` }
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "fresh", version: "1.0.0", private: true, type: "module", dependencies }),
  )
  writeFileSync(
    join(dir, "package-lock.json"),
    JSON.stringify({
      name: "fresh",
      version: "1.0.0",
      lockfileVersion: 3,
      requires: true,
      packages: {
        "": { name: "fresh", version: "1.0.0", dependencies },
        "node_modules/agentplane": {
          version: manifest.version,
          resolved: `file:${file}`,
          integrity,
          license: manifest.license,
          dependencies: manifest.dependencies,
          bin: manifest.bin,
          engines: manifest.engines,
        },
        ...Object.fromEntries(production),
      },
    }),
  )
}

describe("the packed package", () => {
  it("installs into a fresh project and serves there through npx agentplane serve, with plain node", {
    timeout: 600_000,
  }, async () => {
    Process.assertBuilt()
    const dir = join(inject("scratchDir"), `fresh-${Date.now()}`)
    mkdirSync(dir)

    const pack = Process.start("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
      cwd: Process.ROOT,
    })
    assert.strictEqual(await Process.finish(pack), 0, pack.stderr())
    const [packed] = JSON.parse(pack.stdout()) as ReadonlyArray<{
      readonly filename: string
      readonly integrity: string
      readonly files: ReadonlyArray<{ readonly path: string }>
    }>
    if (packed === undefined) return assert.fail(`npm pack printed no tarball: ${pack.stdout()}`)
    const shipped = packed.files.map((f) => f.path)
    assert.include(shipped, "dist/src/index.js")
    assert.include(shipped, "dist/src/index.d.ts")
    assert.include(shipped, "dist/src/cli/Main.js")
    // The console `serve` serves: its page, bundle and stylesheet (`console/Build.ts`).
    for (const asset of ["index.html", "console.js", "console.css", "favicon.svg"])
      assert.include(shipped, `dist/console/${asset}`)
    assert.isFalse(
      shipped.some((path) => path.endsWith(".ts") && !path.endsWith(".d.ts")),
      "no TypeScript source ships",
    )
    assert.isFalse(
      shipped.some((path) => path.startsWith("test/") || path.startsWith("examples/")),
      "no tests or demo tables",
    )

    freshProject(dir, packed.filename, packed.integrity)
    const install = Process.start("npm", ["ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: dir,
    })
    assert.strictEqual(await Process.finish(install, 480_000), 0, install.stderr())
    const addon = join("node_modules", "better-sqlite3", "build", "Release")
    mkdirSync(join(dir, addon), { recursive: true })
    copyFileSync(join(Process.ROOT, addon, "better_sqlite3.node"), join(dir, addon, "better_sqlite3.node"))

    // Plain node: tsx is a development dependency, so it is not even installed here.
    assert.isFalse(existsSync(join(dir, "node_modules", "tsx")), "tsx was installed")
    assert.strictEqual(
      readlinkSync(join(dir, "node_modules", ".bin", "agentplane")),
      "../agentplane/dist/src/cli/Main.js",
    )

    // The library loads with plain node, from the built files its exports name.
    const load = Process.start(
      "node",
      [
        "--input-type=module",
        "-e",
        'const m = await import("agentplane"); console.log(import.meta.resolve("agentplane")); console.log(typeof m.SqliteBackend.layer, typeof m.Runtime.layer)',
      ],
      { cwd: dir },
    )
    assert.strictEqual(await Process.finish(load), 0, load.stderr())
    assert.match(load.stdout(), /node_modules\/agentplane\/dist\/src\/index\.js\nfunction function\n$/)

    // Every export the README documents is there, read as a project made by `npm init -y` reads
    // it: CommonJS (node's default input), where the ES module loads through import().
    const documented = [
      "BlobStore",
      "BlobStoreFs",
      "BlobStoreSql",
      "CaseStore",
      "Drill",
      "EraseCase",
      "eraseCase",
      "ErasureError",
      "Kek",
      "KeyRing",
      "KeyRingSql",
      "MemoryBackend",
      "Migrations",
      "PgBackend",
      "Runtime",
      "SealedStores",
      "SqliteBackend",
      "SqlStores",
      "Sweeper",
      "TestRuntime",
      ...readmeImports(),
    ]
    const commonJs = Process.start(
      "node",
      [
        "--input-type=commonjs",
        "-e",
        `import("agentplane").then((m) => console.log(JSON.stringify(${JSON.stringify(documented)}.filter((n) => m[n] === undefined))))`,
      ],
      { cwd: dir },
    )
    assert.strictEqual(await Process.finish(commonJs), 0, commonJs.stderr())
    assert.strictEqual(commonJs.stdout(), "[]\n", "documented exports missing from the package")

    // And its declarations type a consumer's code.
    writeFileSync(
      join(dir, "consumer.ts"),
      [
        'import { CorrelationKey, type Ids, Tenant } from "agentplane"',
        'const key: CorrelationKey.CorrelationKey = CorrelationKey.make("invoice", "INV-1")',
        "const tenant: Tenant.TenantId = Tenant.DEFAULT",
        "export const both: readonly [unknown, unknown] = [key, tenant]",
        "export type Run = Ids.RunId",
        "",
      ].join("\n"),
    )
    const tsc = Process.start(
      "node",
      [
        join(Process.ROOT, "node_modules", "typescript", "bin", "tsc"),
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--skipLibCheck",
        "consumer.ts",
      ],
      { cwd: dir },
    )
    assert.strictEqual(await Process.finish(tsc), 0, `${tsc.stdout()}${tsc.stderr()}`)

    const copy = (name: string) => copyFileSync(join(Process.ROOT, "examples", name), join(dir, name))
    copy("demo-tokens.json")
    cpSync(join(Process.ROOT, "examples", "demo-policy"), join(dir, "demo-policy"), { recursive: true })
    const server = Process.start(
      "npx",
      ["agentplane", "serve", "--addr", "127.0.0.1:0", "--tokens", "demo-tokens.json", "--policy", "demo-policy"],
      { cwd: dir },
    )
    try {
      await serves(server, dir)
    } finally {
      Process.killGroup(server, "SIGKILL")
    }
  })
})

/** `server` answers on the embedded default, then stops on SIGTERM to npx's pid, freeing the port. */
const serves = async (server: Process.Run, dir: string) => {
  const url = await Process.listening(server)
  // Out of the box the fresh store is sealed under a KEK written beside it, owner-only.
  assert.match(
    server.stdout(),
    /\(store \.\/agentplane\.db, payloads sealed under the KEK file \.\/agentplane\.db\.kek, new\)/,
  )
  assert.strictEqual(statSync(join(dir, "agentplane.db.kek")).mode & 0o777, 0o600)
  assert.strictEqual((await fetch(`${url}/healthz`)).status, 200)
  const runs = await fetch(`${url}/runs`, { headers: { authorization: `Bearer ${REVIEWER}` } })
  assert.strictEqual(runs.status, 200, await runs.clone().text())
  // The route's body is the API tests' concern; here, that an authenticated read reached the store.
  assert.strictEqual(typeof (await runs.json()), "object")
  assert.isTrue(existsSync(join(dir, "agentplane.db")), "the embedded default store is in the project")
  // The console's assets came in the package and are found beside its built modules.
  for (const path of ["/console", "/console/console.js"])
    assert.strictEqual((await fetch(`${url}${path}`)).status, 200, path)

  // SIGTERM to npx's pid alone: its shell dies of it without passing it on, and the server,
  // orphaned, stops itself (Main.ts) instead of serving on.
  Process.signal(server, "SIGTERM")
  await Process.groupGone(server)
  assert.match(server.stdout(), /agentplane stopping[^\n]*\nagentplane stopped\n/)
  assert.isTrue(await Process.portFree(Number(new URL(url).port)), "the port is free again")
}
