// Values that test/support/globalSetup.ts hands to every test file through
// vitest's `provide` / `inject`. This file only augments vitest's types.
declare module "vitest" {
  export interface ProvidedContext {
    /** Connection URL of the fresh database created for this test run. */
    pgUrl: string
    /** Where the server came from: "DATABASE_URL" | "local" | "embedded". */
    pgSource: string
    /** A directory of this run's own for SQLite files, removed when the run ends. */
    scratchDir: string
  }
}

export {}
