/**
 * AES-256-GCM from `node:crypto`, the one cipher of the key ring and of sealed payloads. A box is
 * `iv (12) ‖ tag (16) ‖ ciphertext`; the associated data binds it to where it belongs (a scope),
 * so a box copied under another scope fails to open instead of opening there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Either } from "effect"

const IV = 12
const TAG = 16
export const KEY_BYTES = 32

/** A fresh random 256-bit key. */
export const generateKey = (): Uint8Array => randomBytes(KEY_BYTES)

/** Encrypts `plaintext` under `key` with a fresh random IV; `aad` is authenticated, not stored. */
export const seal = (key: Uint8Array, aad: string, plaintext: Uint8Array): Uint8Array => {
  const iv = randomBytes(IV)
  const cipher = createCipheriv("aes-256-gcm", key, iv)
  cipher.setAAD(Buffer.from(aad, "utf8"))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body])
}

/** Decrypts a box; a wrong key, wrong `aad` or any changed byte is `Left`, never garbage. */
export const open = (key: Uint8Array, aad: string, box: Uint8Array): Either.Either<Uint8Array, string> => {
  if (box.length < IV + TAG) return Either.left(`a sealed box is at least ${IV + TAG} bytes, found ${box.length}`)
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, box.subarray(0, IV))
    decipher.setAAD(Buffer.from(aad, "utf8"))
    decipher.setAuthTag(box.subarray(IV, IV + TAG))
    return Either.right(Buffer.concat([decipher.update(box.subarray(IV + TAG)), decipher.final()]))
  } catch {
    return Either.left("the box does not authenticate under this key and scope")
  }
}
