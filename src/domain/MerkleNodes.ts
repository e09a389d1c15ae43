/**
 * The transparency log's tree as a store keeps it: the hash of every complete subtree, and
 * nothing else. Node (level ℓ, index i) covers leaves [i·2^ℓ, (i+1)·2^ℓ); it is complete once
 * the log has (i+1)·2^ℓ leaves, and from then on its hash never changes, so a stored node is
 * written once and never updated.
 *
 * Why only complete subtrees suffice for any size n ≤ the current one: every hash a root or a
 * proof at size n needs is MTH of a range [start, end) with start a multiple of a power of two
 * 2^j ≥ end − start (RFC 9162 only ever splits at powers of two). Such a range is the run of
 * complete subtrees given by the bits of end − start, largest first (`cover`), and its MTH is
 * their hashes folded from the right. Those subtrees are complete at size n, so they are stored.
 * An inclusion proof has at most one incomplete range (on the right border), so a proof needs
 * O(log n) nodes, all known before any is read: a SQL store fetches `plan.nodes` in one statement.
 *
 * Integration (Tessera's model): leaves take positions when runs are sealed and are hashed into
 * the tree later, in position order. The "right edge" (compact range) of a tree of size n is
 * `cover(0, n)`: one node per set bit of n, largest first. Appending a leaf pushes it onto the
 * edge and merges the top two nodes while they are siblings, which emits exactly the subtrees the
 * leaf completes.
 */
import type { Digest } from "./Digest.js"
import { EMPTY_ROOT, nodeHash, split } from "./Merkle.js"

/** A subtree: `level` ℓ and `index` i cover leaves [i·2^ℓ, (i+1)·2^ℓ). */
export interface NodeId {
  readonly level: number
  readonly index: number
}

/** A complete subtree and its hash: a row the store keeps. */
export interface Node extends NodeId {
  readonly hash: Digest
}

/** The stored hash of a complete subtree; a store that lacks one is damaged and should throw. */
export type Lookup = (level: number, index: number) => Digest

/** A leaf range [start, end). */
export type Range = readonly [start: number, end: number]

/** What a root or proof is made of: its hashes are the MTH of each range, in order; `nodes` is every subtree they read. */
export interface Plan {
  readonly ranges: ReadonlyArray<Range>
  readonly nodes: ReadonlyArray<NodeId>
}

/** The complete subtrees whose hashes make MTH(D[start:end]), leftmost (largest) first; `start` must be aligned as RFC 9162 splits are. */
export const cover = (start: number, end: number): Array<NodeId> => {
  const out: Array<NodeId> = []
  let at = start
  while (at < end) {
    // The largest subtree that starts at `at` and ends by `end`.
    let level = 0
    let width = 1
    while (at % (width * 2) === 0 && at + width * 2 <= end) {
      width *= 2
      level += 1
    }
    out.push({ level, index: at / width })
    at += width
  }
  return out
}

/** MTH of a range from the hashes of its cover: folded from the right, as MTH splits off the largest left subtree first. */
const fold = (hashes: ReadonlyArray<Digest>): Digest => {
  let r = hashes[hashes.length - 1] as Digest
  for (let i = hashes.length - 2; i >= 0; i--) r = nodeHash(hashes[i] as Digest, r)
  return r
}

/** The nodes of the root at `size`: the right edge. */
export const rootPlan = (size: number): Plan => plan(size === 0 ? [] : [[0, size]])

/** The nodes of PATH(index, D[size]) (RFC 9162 §2.1.3.1). Needs `0 <= index < size`. */
export const inclusionPlan = (index: number, size: number): Plan => {
  inRange(index, 0, size - 1, "leaf index")
  const ranges: Array<Range> = []
  let lo = 0
  let hi = size
  // Walk down from the root to the leaf, noting the sibling of each step; the proof lists them bottom-up.
  while (hi - lo > 1) {
    const k = split(hi - lo)
    if (index < lo + k) {
      ranges.push([lo + k, hi])
      hi = lo + k
    } else {
      ranges.push([lo, lo + k])
      lo += k
    }
  }
  return plan(ranges.reverse())
}

/** The nodes of PROOF(first, D[second]) (RFC 9162 §2.1.4.1). Needs `0 < first <= second`. */
export const consistencyPlan = (first: number, second: number): Plan => {
  inRange(first, 1, second, "old size")
  const ranges: Array<Range> = []
  let lo = 0
  let hi = second
  let m = first
  // SUBPROOF's flag b: whether the subtree at hand starts where the old tree does (and so is known to the verifier).
  let known = true
  while (m !== hi - lo) {
    const k = split(hi - lo)
    if (m <= k) {
      ranges.push([lo + k, hi])
      hi = lo + k
    } else {
      ranges.push([lo, lo + k])
      lo += k
      m -= k
      known = false
    }
  }
  if (!known) ranges.push([lo, hi])
  return plan(ranges.reverse())
}

/** The hashes a plan stands for, read through `lookup`. */
export const prove = (p: Plan, lookup: Lookup): Array<Digest> =>
  p.ranges.map(([start, end]) => fold(cover(start, end).map((n) => lookup(n.level, n.index))))

/** The root of the tree's first `size` leaves. */
export const rootAt = (size: number, lookup: Lookup): Digest =>
  size === 0 ? EMPTY_ROOT : (prove(rootPlan(size), lookup)[0] as Digest)

/** PATH(index, D[size]) from stored subtrees. */
export const inclusionProof = (index: number, size: number, lookup: Lookup): Array<Digest> =>
  prove(inclusionPlan(index, size), lookup)

/** PROOF(first, D[second]) from stored subtrees. */
export const consistencyProof = (first: number, second: number, lookup: Lookup): Array<Digest> =>
  prove(consistencyPlan(first, second), lookup)

/** What integrating a batch produced: the subtrees to store, the new edge and the new root. */
export interface Integrated {
  readonly size: number
  readonly edge: ReadonlyArray<Digest>
  /** Every subtree the batch completed, leaves (level 0) included, in the order they completed. */
  readonly nodes: ReadonlyArray<Node>
  readonly root: Digest
}

/**
 * Appends `leaves` (leaf hashes) at positions size … size+k−1 to the tree whose right edge is
 * `edge` (the hashes of `cover(0, size)`, largest first: what `rootPlan(size).nodes` names).
 */
export const integrate = (size: number, edge: ReadonlyArray<Digest>, leaves: ReadonlyArray<Digest>): Integrated => {
  const expected = cover(0, size).length
  if (edge.length !== expected)
    throw new RangeError(`a tree of ${size} has ${expected} edge nodes, but ${edge.length} were given`)
  const stack = [...edge]
  const nodes: Array<Node> = []
  let position = size
  for (const leaf of leaves) {
    nodes.push({ level: 0, index: position, hash: leaf })
    stack.push(leaf)
    // An odd index is a right child: it completes its parent, and so on up while the parent is a right child too.
    for (let level = 0, index = position; index % 2 === 1; ) {
      const right = stack.pop() as Digest
      const left = stack.pop() as Digest
      const hash = nodeHash(left, right)
      level += 1
      index = (index - 1) / 2
      nodes.push({ level, index, hash })
      stack.push(hash)
    }
    position += 1
  }
  return { size: position, edge: stack, nodes, root: stack.length === 0 ? EMPTY_ROOT : fold(stack) }
}

// internal

const plan = (ranges: ReadonlyArray<Range>): Plan => {
  const seen = new Set<string>()
  const nodes: Array<NodeId> = []
  for (const [start, end] of ranges)
    for (const n of cover(start, end)) {
      const key = `${n.level}/${n.index}`
      if (!seen.has(key)) {
        seen.add(key)
        nodes.push(n)
      }
    }
  return { ranges, nodes }
}

const inRange = (value: number, min: number, max: number, what: string): void => {
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new RangeError(`${what} ${value} is outside ${min}..${max}`)
}
