/**
 * Checking RFC 9162 proofs (inclusion and consistency, RFC 9162 §2.1.3.2 and §2.1.4.2): what an
 * auditor runs offline, holding only a checkpoint's size and root. Each step below is the RFC's
 * numbered step.
 *
 * Sizes and indices are JavaScript numbers, so the RFC's bit operations are written as
 * arithmetic (`% 2`, halving): `>>` would cut them to 32 bits, and a log may outgrow that.
 *
 * The RFC defines consistency only for `0 < first < second`. At `first = second` the proof is
 * empty and the roots must be equal; from `first = 0` there is nothing to prove (every tree
 * extends the empty one), so `verifyConsistency` refuses a proof from 0 rather than answering
 * "consistent", as the transparency-dev vectors expect. An auditor holding a kept checkpoint asks
 * the other question, whether a newer one extends it: `verifyExtends`, which holds from a kept
 * size-0 checkpoint with the empty root and no proof (RFC 9162 §2.1.4: the empty tree is a
 * prefix of every tree).
 */
import { Either } from "effect"
import { ProofInvalid } from "../errors/LogError.js"
import type { Digest } from "./Digest.js"
import { EMPTY_ROOT, nodeHash } from "./Merkle.js"

/** Whether `proof` shows the leaf hashed `leaf` at `index` in the tree of `size` leaves whose root is `root`. */
export const verifyInclusion = (
  index: number,
  size: number,
  leaf: Digest,
  proof: ReadonlyArray<Digest>,
  root: Digest,
): Either.Either<void, ProofInvalid> => {
  const fail = (detail: string) => Either.left(new ProofInvalid({ proof: "inclusion", detail }))
  if (!isCount(index) || !isCount(size)) return fail(`index ${index} and size ${size} must be non-negative integers`)
  // 1. leaf_index < tree_size.
  if (index >= size) return fail(`leaf ${index} is not in a tree of ${size}`)
  // 2. fn = leaf_index, sn = tree_size - 1. 3. r = hash.
  let fn = index
  let sn = size - 1
  let r = leaf
  // 4. each p in the path.
  for (const p of proof) {
    // a. The path is longer than the tree is deep.
    if (sn === 0) return fail(`${proof.length} hashes is too many for leaf ${index} of ${size}`)
    // b. fn is a right child, or the last node of its level (its sibling, if any, is on the left).
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r)
      // ii. When fn is the last node but a left child, climb past the levels where its subtree has
      // no right sibling: the path skips them.
      while (!odd(fn) && fn !== 0) {
        fn = half(fn)
        sn = half(sn)
      }
    } else {
      r = nodeHash(r, p)
    }
    // c.
    fn = half(fn)
    sn = half(sn)
  }
  // 5. sn = 0 (the path reached the root) and r = root.
  if (sn !== 0) return fail(`${proof.length} hashes is too few for leaf ${index} of ${size}`)
  return r === root ? Either.void : fail(`the path leads to ${r}, not the root ${root}`)
}

/**
 * Whether the kept checkpoint (`first` leaves, `firstRoot`) is a prefix of the newer one: from a
 * kept empty tree, when its root is the empty root and the proof is empty (the log answers none);
 * otherwise `verifyConsistency`.
 */
export const verifyExtends = (
  first: number,
  second: number,
  proof: ReadonlyArray<Digest>,
  firstRoot: Digest,
  secondRoot: Digest,
): Either.Either<void, ProofInvalid> => {
  if (first !== 0 || !isCount(second)) return verifyConsistency(first, second, proof, firstRoot, secondRoot)
  const fail = (detail: string) => Either.left(new ProofInvalid({ proof: "consistency", detail }))
  if (firstRoot !== EMPTY_ROOT) return fail(`a tree of 0 leaves has the root ${EMPTY_ROOT}, not ${firstRoot}`)
  if (proof.length !== 0) return fail(`every tree extends the empty one, but the proof has ${proof.length} hashes`)
  if (second === 0 && secondRoot !== EMPTY_ROOT)
    return fail(`a tree of 0 leaves has the root ${EMPTY_ROOT}, not ${secondRoot}`)
  return Either.void
}

/** Whether `proof` shows the tree of `first` leaves with root `firstRoot` is a prefix of the tree of `second` with `secondRoot`. */
export const verifyConsistency = (
  first: number,
  second: number,
  proof: ReadonlyArray<Digest>,
  firstRoot: Digest,
  secondRoot: Digest,
): Either.Either<void, ProofInvalid> => {
  const fail = (detail: string) => Either.left(new ProofInvalid({ proof: "consistency", detail }))
  if (!isCount(first) || !isCount(second)) return fail(`sizes ${first} and ${second} must be non-negative integers`)
  if (first > second) return fail(`the old size ${first} is larger than the new size ${second}`)
  if (first === 0) return fail("a proof from the empty tree proves nothing: every tree extends it")
  if (first === second) {
    if (proof.length !== 0) return fail(`sizes are equal (${first}), but the proof has ${proof.length} hashes`)
    return firstRoot === secondRoot ? Either.void : fail(`sizes are equal (${first}), but the roots differ`)
  }
  // 1.
  if (proof.length === 0) return fail(`an empty proof cannot take ${first} leaves to ${second}`)
  // 2. An old tree that is a complete subtree is itself the first node of the path: the proof leaves it out.
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : proof
  // 3.
  let fn = first - 1
  let sn = second - 1
  // 4. Climb past the levels where the old tree's last node is a right child: their left siblings are inside it.
  while (odd(fn)) {
    fn = half(fn)
    sn = half(sn)
  }
  // 5.
  let fr = path[0] as Digest
  let sr = fr
  // 6.
  for (const c of path.slice(1)) {
    // a.
    if (sn === 0) return fail(`${proof.length} hashes is too many for ${first} → ${second}`)
    // b. c is a left sibling: inside the old tree, so both roots take it.
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr)
      sr = nodeHash(c, sr)
      while (!odd(fn) && fn !== 0) {
        fn = half(fn)
        sn = half(sn)
      }
    } else {
      // A right sibling: leaves added after the old tree, so only the new root takes it.
      sr = nodeHash(sr, c)
    }
    // c.
    fn = half(fn)
    sn = half(sn)
  }
  // 7.
  if (sn !== 0) return fail(`${proof.length} hashes is too few for ${first} → ${second}`)
  if (fr !== firstRoot) return fail(`the proof leads to ${fr}, not the old root ${firstRoot}`)
  if (sr !== secondRoot) return fail(`the proof leads to ${sr}, not the new root ${secondRoot}`)
  return Either.void
}

// internal

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0
const odd = (n: number): boolean => n % 2 === 1
const half = (n: number): number => Math.floor(n / 2)
const isPowerOfTwo = (n: number): boolean => {
  let m = n
  while (m > 1 && !odd(m)) m = half(m)
  return m === 1
}
