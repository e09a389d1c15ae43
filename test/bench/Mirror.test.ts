/**
 * The benchmark's raw ceilings must send exactly what the stores send: each operation runs once
 * through its store (statements captured on the SqlClient's own path) and once through its raw
 * mirror, and the two scripts must match statement for statement, transactions included. A change
 * to a store's SQL fails here, naming the operation, until `bench/ops` is updated to match.
 */
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, inject, it } from "vitest"
import * as Databases from "../../bench/Databases.js"
import * as Mirror from "../../bench/Mirror.js"
import type { Op } from "../../bench/Op.js"
import { ALL } from "../../bench/ops/All.js"
import { putState } from "../../bench/ops/CaseOps.js"
import * as Raw from "../../bench/Raw.js"
import { assert } from "../support/Assert.js"

const backends = [
  {
    name: "postgres",
    open: () => ({
      runtime: Databases.pgRuntime(inject("pgUrl"), 2),
      raw: Raw.pgRaw({ url: inject("pgUrl"), size: 2 }),
      file: undefined,
    }),
  },
  {
    name: "sqlite",
    open: () => {
      const file = join(inject("scratchDir"), `mirror-${randomUUID()}.db`)
      return { runtime: Databases.sqliteRuntime(file), raw: Raw.sqliteRaw(file), file }
    },
  },
]

for (const backend of backends) {
  describe(`bench mirrors on ${backend.name}`, () => {
    let opened: ReturnType<typeof backend.open>
    // Tenants of their own: the test database is shared with every other suite of the run.
    const prefix = `mirror-${randomUUID()}`

    beforeAll(async () => {
      opened = backend.open()
      // Builds the layer, migrating before the raw client writes fixtures.
      await opened.runtime.runtime()
    })

    afterAll(async () => {
      await opened.raw.close()
      await opened.runtime.dispose()
      if (opened.file !== undefined) {
        for (const suffix of ["", "-wal", "-shm"]) rmSync(`${opened.file}${suffix}`, { force: true })
      }
    })

    for (const [index, op] of ALL.entries()) {
      it(`${op.name}: the raw mirror sends the store's statements`, async () => {
        const both = await Mirror.scripts(op, opened.runtime, opened.raw, `${prefix}-${index}`)
        assert.isTrue(both.store.length > 0, "the store call sent no statement the capture saw")
        assert.deepStrictEqual(both.raw, both.store)
      })
    }

    it("a mirror that sends one statement more is reported stale", async () => {
      const stale: Op = {
        ...putState,
        make: (cell) => {
          const inst = putState.make(cell)
          return {
            ...inst,
            raw: async (raw, i, w) => {
              await inst.raw(raw, i, w)
              await raw.query("SELECT 1")
            },
          }
        },
      }
      const found = await Mirror.check(stale, opened.runtime, opened.raw, `${prefix}-stale`)
      assert.isTrue(found !== undefined, "a stale mirror passed the check")
      assert.strictEqual(found?.raw[found.at], "SELECT 1")
    })
  })
}
