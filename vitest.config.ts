import { defineConfig } from "vitest/config"

export default defineConfig({
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
