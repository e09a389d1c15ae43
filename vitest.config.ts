import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  // The package's own name (the examples import "agentplane") is its source under test, never the
  // built dist/ its exports point at, which may be stale and would be a second copy of every
  // module. tsconfig.json's paths do the same for tsc and tsx.
  resolve: {
    alias: [{ find: /^agentplane$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Every test name in the output, so a run shows the same battery passing on each backend.
    reporters: ["verbose"],
    // Finds PostgreSQL (DATABASE_URL, local server, or a throwaway embedded
    // cluster), creates a fresh database for the run and drops it afterwards.
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    // Starting a throwaway cluster can take ~20 s.
    hookTimeout: 120_000,
  },
})
