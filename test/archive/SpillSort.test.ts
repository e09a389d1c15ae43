/**
 * `SpillSort` gives back every item in order, ties in the order they were added, whether the
 * items fit in memory or went to many files (more than it merges at once), with lines longer
 * than a read block and characters split across blocks; it leaves no file behind once closed,
 * including when closed half read. `byCodePoint` is the order `Buffer.compare` gives the texts.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, it } from "vitest"
import * as SpillSort from "../../src/archive/SpillSort.js"
import { assert } from "../support/Assert.js"

interface Item {
  readonly key: number
  readonly added: number
  readonly text?: string
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "agentplane-spillsort-test-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/** A fresh parent directory, to see what the sort leaves in it. */
const parent = (() => {
  let n = 0
  return () => {
    n += 1
    const d = path.join(root, String(n))
    fs.mkdirSync(d)
    return d
  }
})()

const byKey = (a: Item, b: Item) => a.key - b.key

const drain = <A>(cursor: SpillSort.Cursor<A>): Array<A> => {
  const out: Array<A> = []
  for (let item = cursor.next(); item !== undefined; item = cursor.next()) out.push(item)
  return out
}

/** A deterministic sequence of keys with many repeats. */
const keys = (n: number, range: number): Array<number> => {
  let state = 7
  return Array.from({ length: n }, () => {
    state = (state * 48_271) % 2_147_483_647
    return state % range
  })
}

const sortedBy = (inMemory: number, items: ReadonlyArray<Item>, directory: string) => {
  const sort = SpillSort.make<Item>({ compare: byKey, inMemory, directory })
  for (const item of items) sort.add(item)
  return { sort, sorted: sort.sorted() }
}

describe("SpillSort", () => {
  it("nothing added gives nothing back, and makes no directory", () => {
    const directory = parent()
    for (const inMemory of [1, 3, 1_000]) {
      const { sort, sorted } = sortedBy(inMemory, [], directory)
      assert.deepStrictEqual(drain(sorted.open()), [])
      assert.strictEqual(sorted.open().peek(), undefined)
      assert.strictEqual(sort.spilled(), 0)
      sort.close()
    }
    assert.deepStrictEqual(fs.readdirSync(directory), [])
  })

  it("gives back every item in order, ties in the order added, in memory or from many files", () => {
    const items = keys(2_000, 50).map((key, added) => ({ key, added }))
    // Array.prototype.sort is stable: the definition.
    const expected = [...items].sort(byKey)
    // 5,000 hold them all, 2,000 spill once full; 100, 3 and 1 spill more files than one merge takes.
    for (const [inMemory, files] of [
      [5_000, 0],
      [2_000, 1],
      [100, 20],
      [3, 667],
      [1, 2_000],
    ] as const) {
      const directory = parent()
      const { sort, sorted } = sortedBy(inMemory, items, directory)
      assert.strictEqual(sort.spilled(), files, `spilled at ${inMemory}`)
      assert.deepStrictEqual(drain(sorted.open()), expected, `in memory ${inMemory}`)
      // Opened again, the cursor reads the items afresh; peek does not take.
      const again = sorted.open()
      assert.deepStrictEqual(again.peek(), expected[0])
      assert.deepStrictEqual(again.peek(), expected[0])
      assert.deepStrictEqual(drain(again), expected, `in memory ${inMemory}, read again`)
      assert.strictEqual(fs.readdirSync(directory).length, files === 0 ? 0 : 1)
      sort.close()
      assert.deepStrictEqual(fs.readdirSync(directory), [], `removed at ${inMemory}`)
    }
  })

  it("reads lines longer than a block, and characters split across blocks, whole", () => {
    const long = "é🙂x".repeat(SpillSort.BLOCK / 3)
    const items = keys(40, 10).map((key, added) => ({ key, added, text: `${added}:${long.slice(added)}` }))
    const directory = parent()
    const { sort, sorted } = sortedBy(4, items, directory)
    assert.strictEqual(sort.spilled(), 10)
    assert.deepStrictEqual(drain(sorted.open()), [...items].sort(byKey))
    sort.close()
  })

  it("closed half read, or before it was sorted, leaves nothing behind, and is idempotent", () => {
    const items = keys(500, 1_000).map((key, added) => ({ key, added }))
    const directory = parent()
    const { sort, sorted } = sortedBy(7, items, directory)
    const cursor = sorted.open()
    for (let i = 0; i < 100; i++) cursor.next()
    sort.close()
    sort.close()
    assert.deepStrictEqual(fs.readdirSync(directory), [])
    const early = SpillSort.make<Item>({ compare: byKey, inMemory: 2, directory })
    for (const item of items.slice(0, 9)) early.add(item)
    assert.strictEqual(fs.readdirSync(directory).length, 1)
    early.close()
    assert.deepStrictEqual(fs.readdirSync(directory), [])
  })

  it("byCodePoint orders texts as Buffer.compare orders their UTF-8", () => {
    const alphabet = ["a", "z", "~", "é", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "🙂", "𐀀", "\u{10ffff}"]
    const texts: Array<string> = [""]
    let state = 3
    for (let i = 0; i < 400; i++) {
      let text = ""
      const length = i % 5
      for (let j = 0; j < length; j++) {
        state = (state * 48_271) % 2_147_483_647
        text += alphabet[state % alphabet.length]
      }
      texts.push(text)
    }
    const bytes = [...texts].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    assert.deepStrictEqual([...texts].sort(SpillSort.byCodePoint), bytes)
    // The case the UTF-16 order gets wrong: a code point past U+FFFF sorts after U+FFFF.
    assert.isTrue(SpillSort.byCodePoint("\uffff", "🙂") < 0)
    assert.isTrue("\uffff" > "🙂")
  })
})
