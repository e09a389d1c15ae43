import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import type * as Digest from "../../src/domain/Digest.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as MerkleNodes from "../../src/domain/MerkleNodes.js"

const leafOf = (i: number): Digest.Digest => Merkle.leafHash(Buffer.from(`leaf ${i}`, "utf8"))
const many = Array.from({ length: 300 }, (_, i) => leafOf(i))

/** A store of complete subtrees as integration wrote them, with a count of reads. */
const storeOf = (leaves: ReadonlyArray<Digest.Digest>) => {
  const nodes = new Map<string, Digest.Digest>()
  for (const n of MerkleNodes.integrate(0, [], leaves).nodes) nodes.set(`${n.level}/${n.index}`, n.hash)
  let reads = 0
  const lookup: MerkleNodes.Lookup = (level, index) => {
    reads += 1
    const hash = nodes.get(`${level}/${index}`)
    if (hash === undefined) throw new Error(`no complete subtree ${level}/${index}`)
    return hash
  }
  return { nodes, lookup, reads: () => reads }
}

/** Splits `n` into batch sizes drawn from `cuts`. */
const batches = (n: number, cuts: ReadonlyArray<number>): Array<number> => {
  const out: Array<number> = []
  let left = n
  for (const c of cuts) {
    if (left === 0) break
    const k = Math.min(left, c)
    out.push(k)
    left -= k
  }
  if (left > 0) out.push(left)
  return out
}

describe("MerkleNodes.cover", () => {
  it("is one subtree per set bit of the size, largest first", () => {
    expect(MerkleNodes.cover(0, 7)).toEqual([
      { level: 2, index: 0 },
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ])
    expect(MerkleNodes.cover(8, 13)).toEqual([
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ])
    expect(MerkleNodes.cover(0, 0)).toEqual([])
  })
})

describe("MerkleNodes.integrate", () => {
  it("stores each complete subtree once, with the hash MTH gives its leaves", () => {
    const { nodes } = storeOf(many.slice(0, 13))
    // 13 leaves, 6 pairs, 3 quads, 1 octet.
    expect(nodes.size).toBe(13 + 6 + 3 + 1)
    for (const [key, hash] of nodes) {
      const [level, index] = key.split("/").map(Number) as [number, number]
      const width = 2 ** level
      expect(hash).toBe(Merkle.root(many.slice(index * width, (index + 1) * width)))
    }
  })

  it("gives the same roots and edges as MTH from scratch, however the leaves are batched", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 0, max: 300 }),
        FastCheck.array(FastCheck.integer({ min: 1, max: 40 }), { maxLength: 30 }),
        (n, cuts) => {
          let size = 0
          let edge: ReadonlyArray<Digest.Digest> = []
          const stored = new Map<string, Digest.Digest>()
          for (const k of batches(n, cuts)) {
            const out = MerkleNodes.integrate(size, edge, many.slice(size, size + k))
            for (const node of out.nodes) {
              const key = `${node.level}/${node.index}`
              // Integration never rewrites a stored subtree.
              expect(stored.has(key)).toBe(false)
              stored.set(key, node.hash)
            }
            size = out.size
            edge = out.edge
            expect(out.root).toBe(Merkle.root(many.slice(0, size)))
            expect(edge).toEqual(MerkleNodes.rootPlan(size).nodes.map((id) => stored.get(`${id.level}/${id.index}`)))
          }
          expect(size).toBe(n)
        },
      ),
      { numRuns: 150 },
    )
  })

  it("refuses an edge that does not fit the size", () => {
    const edge = MerkleNodes.integrate(0, [], many.slice(0, 3)).edge
    expect(() => MerkleNodes.integrate(4, edge, [])).toThrow(RangeError)
    expect(() => MerkleNodes.integrate(3, edge.slice(1), [])).toThrow(RangeError)
  })

  it("an empty batch changes nothing and stores nothing", () => {
    const first = MerkleNodes.integrate(0, [], many.slice(0, 5))
    const again = MerkleNodes.integrate(5, first.edge, [])
    expect(again).toEqual({ size: 5, edge: first.edge, nodes: [], root: first.root })
  })
})

const sizes = FastCheck.integer({ min: 1, max: 300 }).chain((n) =>
  FastCheck.tuple(FastCheck.constant(n), FastCheck.integer({ min: 1, max: n }), FastCheck.integer({ min: 1, max: n })),
)

describe("MerkleNodes proofs from stored subtrees", () => {
  // The store has integrated all 300; proofs are asked at older sizes n <= 300.
  const store = storeOf(many)

  it("the root at every older size is MTH from scratch", () => {
    for (let n = 0; n <= 300; n++) expect(MerkleNodes.rootAt(n, store.lookup)).toBe(Merkle.root(many.slice(0, n)))
  })

  it("inclusion and consistency proofs equal the RFC's PATH and PROOF over the leaf list", () => {
    FastCheck.assert(
      FastCheck.property(sizes, ([n, a, b]) => {
        const leaves = many.slice(0, n)
        expect(MerkleNodes.inclusionProof(a - 1, n, store.lookup)).toEqual(Merkle.inclusionPath(a - 1, leaves))
        expect(MerkleNodes.consistencyProof(b, n, store.lookup)).toEqual(Merkle.consistencyPath(b, leaves))
      }),
      { numRuns: 300 },
    )
  })

  it("a proof reads only the subtrees its plan names, O(log n) of them", () => {
    for (const [index, n] of [
      [0, 300],
      [299, 300],
      [150, 257],
      [5, 7],
    ] as const) {
      const plan = MerkleNodes.inclusionPlan(index, n)
      const before = store.reads()
      MerkleNodes.prove(plan, store.lookup)
      expect(store.reads() - before).toBe(plan.nodes.length)
      expect(plan.nodes.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)))
      // Every planned subtree is complete at size n: a proof at an older size never needs a newer node.
      for (const node of plan.nodes) expect((node.index + 1) * 2 ** node.level).toBeLessThanOrEqual(n)
    }
    const plan = MerkleNodes.consistencyPlan(100, 300)
    expect(plan.nodes.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(300)))
  })

  it("plans name the published proof's shape for the eight-leaf tree", () => {
    expect(MerkleNodes.inclusionPlan(5, 8).ranges).toEqual([
      [4, 5],
      [6, 8],
      [0, 4],
    ])
    expect(MerkleNodes.consistencyPlan(6, 8).ranges).toEqual([
      [4, 6],
      [6, 8],
      [0, 4],
    ])
    expect(MerkleNodes.consistencyPlan(4, 8).ranges).toEqual([[4, 8]])
    expect(MerkleNodes.consistencyPlan(8, 8).ranges).toEqual([])
  })

  it("refuses a leaf outside the tree and an old size outside 1..n", () => {
    expect(() => MerkleNodes.inclusionPlan(5, 5)).toThrow(RangeError)
    expect(() => MerkleNodes.consistencyPlan(0, 5)).toThrow(RangeError)
    expect(() => MerkleNodes.consistencyPlan(6, 5)).toThrow(RangeError)
  })
})
