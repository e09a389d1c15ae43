/**
 * Strict JSON text (RFC 8259) → `Json`, for every body and file agentplane reads. Stricter than
 * `JSON.parse` in three ways that each closed a hole:
 *
 * - A duplicated object key is refused, at any depth. `JSON.parse` keeps the last one, so
 *   `{"approved":true,"approved":false}` meant one thing to a proxy or audit log that reads the
 *   first and the opposite to us (and a policy file with two `allow` keys silently lost one).
 * - Nesting is bounded (`maxDepth`, default `Limits.MAX_JSON_DEPTH`) while scanning, and the scan
 *   is a loop with an explicit stack: 4,000 nested arrays overflowed the recursive check after
 *   `JSON.parse` and ended as an empty 500.
 * - A string or key holding a lone surrogate (`"\ud800"`) is refused: it has no UTF-8 form, and
 *   PostgreSQL and SQLite each store it differently.
 *
 * Written here rather than taken from npm: the well-kept parsers either keep duplicates
 * (last-wins, like `JSON.parse`), recurse, or report positions but not JSON paths; none does all
 * three, and the scanner is small. Every refusal names the problem and where, as a JSON path
 * (`$.correlation[3].value`) and a character offset.
 */
import { Either } from "effect"
import type { Json } from "./JsonValue.js"
import { MAX_JSON_DEPTH } from "./Limits.js"
import { isWellFormed } from "./Text.js"

export interface Options {
  /** Nesting levels allowed (arrays and objects); a scalar is level 0. */
  readonly maxDepth?: number
}

/** JSON text → value; `Left` names what is wrong and where (a JSON path and an offset). */
export const parse = (text: string, options?: Options): Either.Either<Json, string> => {
  try {
    return Either.right(new Scanner(text, options?.maxDepth ?? MAX_JSON_DEPTH).run())
  } catch (e) {
    if (e instanceof Refusal) return Either.left(e.message)
    throw e
  }
}

// internal

class Refusal {
  constructor(readonly message: string) {}
}

type Frame =
  | { readonly array: true; readonly value: Array<Json>; index: number }
  | {
      readonly array: false
      readonly value: { [key: string]: Json }
      readonly keys: Set<string>
      key: string | undefined
    }

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }

class Scanner {
  private i = 0
  private readonly stack: Array<Frame> = []

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  run(): Json {
    const text = this.text
    const stack = this.stack
    value: for (;;) {
      this.skipSpace()
      let value: Json
      const c = text[this.i]
      if (c === "{" || c === "[") {
        if (stack.length >= this.maxDepth) this.fail(`nested deeper than ${this.maxDepth} levels`)
        this.i++
        this.skipSpace()
        if (c === "[") {
          const frame: Frame = { array: true, value: [], index: 0 }
          if (text[this.i] === "]") {
            this.i++
            value = frame.value
          } else {
            stack.push(frame)
            continue
          }
        } else {
          const frame: Frame = { array: false, value: {}, keys: new Set(), key: undefined }
          if (text[this.i] === "}") {
            this.i++
            value = frame.value
          } else {
            stack.push(frame)
            this.key(frame)
            continue
          }
        }
      } else if (c === '"') {
        value = this.string("a string")
      } else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) {
        value = this.number()
      } else if (text.startsWith("true", this.i)) {
        this.i += 4
        value = true
      } else if (text.startsWith("false", this.i)) {
        this.i += 5
        value = false
      } else if (text.startsWith("null", this.i)) {
        this.i += 4
        value = null
      } else {
        return this.fail(c === undefined ? "the text ends where a value was expected" : `unexpected ${show(c)}`)
      }
      // A value is complete: place it in its container, then close every container that ends here.
      for (;;) {
        const frame = stack[stack.length - 1]
        if (frame === undefined) {
          this.skipSpace()
          if (this.i < text.length) this.fail(`unexpected ${show(text[this.i] as string)} after the value`)
          return value
        }
        if (frame.array) frame.value.push(value)
        else if (frame.key === "__proto__") {
          // Assignment would set the prototype instead of keeping the member.
          Object.defineProperty(frame.value, "__proto__", {
            value,
            enumerable: true,
            writable: true,
            configurable: true,
          })
        } else frame.value[frame.key as string] = value
        this.skipSpace()
        const next = text[this.i]
        if (next === ",") {
          this.i++
          if (frame.array) frame.index++
          else {
            this.skipSpace()
            this.key(frame)
          }
          continue value
        }
        if (next === (frame.array ? "]" : "}")) {
          this.i++
          stack.pop()
          value = frame.value
          continue
        }
        return this.fail(
          next === undefined
            ? `the text ends inside ${frame.array ? "an array" : "an object"}`
            : `expected "," or ${frame.array ? '"]"' : '"}"'}, not ${show(next)}`,
        )
      }
    }
  }

  /** An object's member name and its colon; a name seen before in the same object is refused. */
  private key(frame: Extract<Frame, { array: false }>): void {
    frame.key = undefined
    if (this.text[this.i] !== '"') {
      this.fail(
        this.i >= this.text.length ? "the text ends inside an object" : "expected a member name in double quotes",
      )
    }
    const key = this.string("a member name")
    frame.key = key
    if (frame.keys.has(key)) this.fail("duplicate member name")
    frame.keys.add(key)
    this.skipSpace()
    if (this.text[this.i] !== ":") this.fail('expected ":" after the member name')
    this.i++
  }

  private string(what: string): string {
    const text = this.text
    const start = this.i
    let i = start + 1
    let out = ""
    let run = i
    for (;;) {
      const code = text.charCodeAt(i)
      if (Number.isNaN(code)) {
        this.i = start
        return this.fail(`${what} is not closed`)
      }
      if (code === 0x22) break
      if (code < 0x20) {
        this.i = i
        return this.fail(`a control character (U+${hex(code)}) inside ${what} must be escaped`)
      }
      if (code !== 0x5c) {
        i++
        continue
      }
      out += text.slice(run, i)
      const e = text[i + 1]
      if (e === "u") {
        const digits = text.slice(i + 2, i + 6)
        if (!/^[0-9A-Fa-f]{4}$/.test(digits)) {
          this.i = i
          return this.fail(`a \\u escape inside ${what} needs four hex digits`)
        }
        out += String.fromCharCode(Number.parseInt(digits, 16))
        i += 6
      } else {
        const decoded = e === undefined ? undefined : ESCAPES[e]
        if (decoded === undefined) {
          this.i = i
          return this.fail(
            `${e === undefined ? "an unfinished escape" : `the escape \\${e}`} inside ${what} is not JSON`,
          )
        }
        out += decoded
        i += 2
      }
      run = i
    }
    out += text.slice(run, i)
    this.i = i + 1
    if (!isWellFormed(out)) {
      this.i = start
      this.fail(`${what} contains a lone surrogate (text with no UTF-8 form)`)
    }
    return out
  }

  private number(): number {
    NUMBER.lastIndex = this.i
    const match = NUMBER.exec(this.text)
    if (match === null) return this.fail("malformed number")
    const end = this.i + match[0].length
    const after = this.text[end]
    // `01`, `1.` and `1e` stop the pattern early; what follows must end the number.
    if (after !== undefined && /[0-9.eE+-]/.test(after)) {
      this.i = end
      return this.fail("malformed number")
    }
    const n = Number(match[0])
    if (!Number.isFinite(n)) return this.fail("number out of range (it has no finite double)")
    // An integer past ±2^53 that no double holds would come back as another (`9007199254740993`
    // is read back `…992`) and no one told: refused. One whose double writes the same digits
    // (what JSON.stringify of a large double gives) or holds it exactly comes back as sent.
    const text = match[0]
    if (!Number.isSafeInteger(n) && /^-?[0-9]+$/.test(text) && String(n) !== text && BigInt(text) !== BigInt(n)) {
      return this.fail("integer beyond ±2^53 that a JSON number cannot carry exactly (send it as a string)")
    }
    this.i = end
    return n
  }

  private skipSpace(): void {
    const text = this.text
    let i = this.i
    for (;;) {
      const c = text.charCodeAt(i)
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++
      else break
    }
    this.i = i
  }

  private fail(problem: string): never {
    throw new Refusal(`${problem} at ${this.path()} (offset ${this.i})`)
  }

  /** Where the scan is, as a JSON path: `$`, `$.a`, `$["a b"][2]`. */
  private path(): string {
    let path = "$"
    for (const frame of this.stack) {
      if (frame.array) path += `[${frame.index}]`
      else if (frame.key !== undefined) {
        const key = frame.key.length > 64 ? `${frame.key.slice(0, 64)}…` : frame.key
        path += IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
      }
    }
    return path
  }
}

const hex = (code: number): string => code.toString(16).toUpperCase().padStart(4, "0")

const show = (c: string): string => {
  const code = c.charCodeAt(0)
  return code < 0x20 || code > 0x7e ? `U+${hex(code)}` : JSON.stringify(c)
}
