/**
 * An external sort for the checks that must hold one item per logged run (`LogCheck`): items
 * are added in any order and read back in order, holding at most `inMemory` of them at a time.
 * While the items fit they stay in memory; past that each full buffer is sorted and written to
 * a temporary file (one JSON line an item), and reading back merges the files, at most
 * `FAN_IN` at a time (earlier merges write intermediate files), each read in `BLOCK`-byte
 * blocks. So memory is `inMemory` items plus `FAN_IN` blocks, whatever the number of items.
 *
 * The sort is stable: items the comparison calls equal come back in the order they were added
 * (`Array.prototype.sort` is stable, and the merge takes from the earliest file on a tie).
 *
 * Synchronous, like the line checker that uses it. The temporary directory is made on the first
 * spill, under `os.tmpdir()` unless `directory` says where, and removed by `close`, which the
 * owner calls when it is done or abandons the sort; a directory still there when the process
 * exits is removed then.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { StringDecoder } from "node:string_decoder"

/** Files merged at once. */
export const FAN_IN = 16

/** Bytes read from a spilled file at a time. */
export const BLOCK = 64 * 1_024

export interface Options<A> {
  readonly compare: (a: A, b: A) => number
  /** Items held before a sorted buffer goes to a file; at least 1. */
  readonly inMemory: number
  /** Where the temporary directory is made; default `os.tmpdir()`. */
  readonly directory?: string
}

/** Items in order: `peek` the next without taking it, `next` to take it; `undefined` when none is left. */
export interface Cursor<A> {
  readonly peek: () => A | undefined
  readonly next: () => A | undefined
}

export interface SpillSort<A> {
  readonly add: (item: A) => void
  /** Adding is over: `open` reads the items in order, as often as asked (each cursor reads them afresh). */
  readonly sorted: () => { readonly open: () => Cursor<A> }
  /** How many files the items were spilled to (0 while they fit in memory). */
  readonly spilled: () => number
  /** Closes open files and removes the temporary directory; idempotent. */
  readonly close: () => void
}

export const make = <A>(options: Options<A>): SpillSort<A> => {
  const { compare } = options
  const inMemory = Math.max(1, options.inMemory)
  let buffer: Array<A> = []
  let dir: string | undefined
  let files: Array<string> = []
  let made = 0
  let spills = 0
  let state: "adding" | "sorted" | "closed" = "adding"
  const open = new Set<number>()

  const newFile = (): string => {
    if (dir === undefined) {
      dir = fs.mkdtempSync(path.join(options.directory ?? os.tmpdir(), "agentplane-sort-"))
      live.add(dir)
      removeAtExit()
    }
    made += 1
    return path.join(dir, `${made}.jsonl`)
  }

  /** Writes `items` (already in order) to a new file. */
  const write = (items: Iterable<A>): string => {
    const file = newFile()
    const fd = fs.openSync(file, "w")
    open.add(fd)
    try {
      let text = ""
      for (const item of items) {
        text += `${JSON.stringify(item)}\n`
        if (text.length >= BLOCK) {
          fs.writeSync(fd, text)
          text = ""
        }
      }
      if (text.length > 0) fs.writeSync(fd, text)
    } finally {
      open.delete(fd)
      fs.closeSync(fd)
    }
    return file
  }

  const spill = () => {
    buffer.sort(compare)
    files.push(write(buffer))
    spills += 1
    buffer = []
  }

  /** The items of one file, in its order. */
  const read = (file: string): Cursor<A> => {
    const fd = fs.openSync(file, "r")
    open.add(fd)
    const block = Buffer.allocUnsafe(BLOCK)
    const decoder = new StringDecoder("utf8")
    let rest = ""
    let lines: Array<string> = []
    let at = 0
    let done = false
    let head: A | undefined
    const fill = () => {
      while (at >= lines.length && !done) {
        if (state === "closed") throw new Error("SpillSort: read after close")
        const n = fs.readSync(fd, block, 0, BLOCK, null)
        if (n === 0) {
          done = true
          open.delete(fd)
          fs.closeSync(fd)
          rest += decoder.end()
          lines = rest.length > 0 ? [rest] : []
          rest = ""
        } else {
          const parts = (rest + decoder.write(block.subarray(0, n))).split("\n")
          rest = parts.pop() ?? ""
          lines = parts
        }
        at = 0
      }
    }
    const peek = () => {
      if (head === undefined) {
        fill()
        const text = lines[at]
        if (text !== undefined) head = JSON.parse(text) as A
      }
      return head
    }
    const next = () => {
      const item = peek()
      if (item !== undefined) {
        head = undefined
        at += 1
      }
      return item
    }
    return { peek, next }
  }

  /** The items of several cursors in order; on a tie the earliest cursor's first (stable). */
  const merge = (cursors: ReadonlyArray<Cursor<A>>): Cursor<A> => {
    const least = (): Cursor<A> | undefined => {
      let best: Cursor<A> | undefined
      let bestItem: A | undefined
      for (const c of cursors) {
        const item = c.peek()
        if (item !== undefined && (bestItem === undefined || compare(item, bestItem) < 0)) {
          best = c
          bestItem = item
        }
      }
      return best
    }
    return { peek: () => least()?.peek(), next: () => least()?.next() }
  }

  const drain = function* (cursor: Cursor<A>): Generator<A> {
    for (let item = cursor.next(); item !== undefined; item = cursor.next()) yield item
  }

  const sorted = () => {
    if (state !== "adding") throw new Error(`SpillSort: sorted twice or after close`)
    state = "sorted"
    if (files.length === 0) {
      const items = buffer.sort(compare)
      return { open: (): Cursor<A> => arrayCursor(items) }
    }
    if (buffer.length > 0) spill()
    // Consecutive groups merged in order keep the sort stable.
    while (files.length > FAN_IN) {
      const merged: Array<string> = []
      for (let i = 0; i < files.length; i += FAN_IN) {
        const group = files.slice(i, i + FAN_IN)
        merged.push(group.length === 1 ? (group[0] as string) : write(drain(merge(group.map(read)))))
        for (const f of group.length === 1 ? [] : group) fs.rmSync(f, { force: true })
      }
      files = merged
    }
    const final = files
    return { open: (): Cursor<A> => merge(final.map(read)) }
  }

  const close = () => {
    if (state === "closed") return
    state = "closed"
    buffer = []
    for (const fd of open) fs.closeSync(fd)
    open.clear()
    if (dir !== undefined) {
      fs.rmSync(dir, { recursive: true, force: true })
      live.delete(dir)
    }
  }

  return {
    add: (item) => {
      if (state !== "adding") throw new Error("SpillSort: add after sorted or close")
      buffer.push(item)
      if (buffer.length >= inMemory) spill()
    },
    sorted,
    spilled: () => spills,
    close,
  }
}

/**
 * Code point order, which is UTF-8 byte order (as `Buffer.compare` of the two texts, and as
 * the stores sort text), without encoding: UTF-16 code units order the same except that a
 * surrogate (a code point past U+FFFF) must come after U+E000–U+FFFF, so those two ranges are
 * swapped at the first unit that differs.
 */
export const byCodePoint = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

// internal

const codePointRank = (unit: number): number => (unit < 0xd800 ? unit : unit <= 0xdfff ? unit + 0x2000 : unit - 0x800)

const arrayCursor = <A>(items: ReadonlyArray<A>): Cursor<A> => {
  let at = 0
  return {
    peek: () => items[at],
    next: () => {
      const item = items[at]
      if (item !== undefined) at += 1
      return item
    },
  }
}

/** Directories not yet closed, removed if the process exits first. */
const live = new Set<string>()
let hooked = false
const removeAtExit = () => {
  if (hooked) return
  hooked = true
  process.once("exit", () => {
    for (const d of live) fs.rmSync(d, { recursive: true, force: true })
  })
}
