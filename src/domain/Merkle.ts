/**
 * The Merkle tree hash of RFC 9162 §2.1 (the same as RFC 6962 §2.1), over SHA-256: the
 * definitions of leaf and node hashes, the root of n leaves (MTH), and inclusion and consistency
 * proofs (PATH and PROOF, RFC 9162 §2.1.3.1 and §2.1.4.1), computed from the whole list of leaf hashes.
 *
 * These are the RFC's recursive definitions written out as they read, over an in-memory list:
 * the reference the transparency log is checked against. The store does not use them;
 * `MerkleNodes` answers the same questions from stored complete subtrees.
 */
import * as Digest from "./Digest.js"

// The one-byte prefixes keep a leaf from ever hashing like an interior node (second-preimage
// resistance, RFC 9162 §2.1.1): a 64-byte leaf equal to two concatenated hashes still differs.
const LEAF = new Uint8Array([0x00])
const NODE = new Uint8Array([0x01])

/** `SHA-256(0x00 ‖ leaf)`. */
export const leafHash = (leaf: Uint8Array): Digest.Digest => Digest.of(Buffer.concat([LEAF, leaf]))

/** `SHA-256(0x01 ‖ left ‖ right)`. */
export const nodeHash = (left: Digest.Digest, right: Digest.Digest): Digest.Digest =>
  Digest.of(Buffer.concat([NODE, Digest.toBytes(left), Digest.toBytes(right)]))

/** MTH({}) = SHA-256 of nothing: the root of the empty tree. */
export const EMPTY_ROOT: Digest.Digest = Digest.of(new Uint8Array(0))

/** The largest power of two smaller than `n`, for `n > 1`: where MTH splits n leaves. */
export const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** MTH(D[n]) over the leaf hashes `D`. */
export const root = (leaves: ReadonlyArray<Digest.Digest>): Digest.Digest =>
  leaves.length === 0 ? EMPTY_ROOT : mth(leaves, 0, leaves.length)

/** PATH(m, D[n]): the audit path of leaf `m`, lowest level first. Needs `0 <= m < n`. */
export const inclusionPath = (m: number, leaves: ReadonlyArray<Digest.Digest>): Array<Digest.Digest> => {
  inRange(m, 0, leaves.length - 1, "leaf index")
  return path(m, leaves, 0, leaves.length)
}

/** PROOF(m, D[n]): the consistency proof from the first `m` leaves to all `n`. Needs `0 < m <= n`. */
export const consistencyPath = (m: number, leaves: ReadonlyArray<Digest.Digest>): Array<Digest.Digest> => {
  inRange(m, 1, leaves.length, "old size")
  return subproof(m, leaves, 0, leaves.length, true)
}

// internal

/** MTH(D[lo:hi]) for `hi > lo`. */
const mth = (d: ReadonlyArray<Digest.Digest>, lo: number, hi: number): Digest.Digest => {
  if (hi - lo === 1) return d[lo] as Digest.Digest
  const k = split(hi - lo)
  return nodeHash(mth(d, lo, lo + k), mth(d, lo + k, hi))
}

/** PATH(m, D[lo:hi]), `m` relative to `lo`. */
const path = (m: number, d: ReadonlyArray<Digest.Digest>, lo: number, hi: number): Array<Digest.Digest> => {
  if (hi - lo === 1) return []
  const k = split(hi - lo)
  return m < k ? [...path(m, d, lo, lo + k), mth(d, lo + k, hi)] : [...path(m - k, d, lo + k, hi), mth(d, lo, lo + k)]
}

/** SUBPROOF(m, D[lo:hi], b), `m` relative to `lo`. */
const subproof = (
  m: number,
  d: ReadonlyArray<Digest.Digest>,
  lo: number,
  hi: number,
  b: boolean,
): Array<Digest.Digest> => {
  // m = n: the old tree is this whole subtree; the verifier knows its hash unless it is a part
  // of the old tree rather than all of it (b false), when the proof must carry it.
  if (m === hi - lo) return b ? [] : [mth(d, lo, hi)]
  const k = split(hi - lo)
  return m <= k
    ? [...subproof(m, d, lo, lo + k, b), mth(d, lo + k, hi)]
    : [...subproof(m - k, d, lo + k, hi, false), mth(d, lo, lo + k)]
}

const inRange = (value: number, min: number, max: number, what: string): void => {
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new RangeError(`${what} ${value} is outside ${min}..${max}`)
}
