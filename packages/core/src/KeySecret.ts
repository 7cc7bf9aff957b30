/**
 * Keys' secrets: their random part's length, its base58 text, how a new one is drawn, and the
 * `start` a key shows of its secret.
 */
import * as Crypto from "node:crypto"

/** Shortest and longest random part of a secret, in bytes. */
export const MIN_BYTE_LENGTH = 16
export const MAX_BYTE_LENGTH = 255
export const DEFAULT_BYTE_LENGTH = 16

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

/** Base58 (Bitcoin's alphabet): no `0OIl`, nothing to escape in a header or a URL. */
export const base58 = (bytes: Uint8Array): string => {
  const digits: Array<number> = []
  for (const byte of bytes) {
    let carry = byte
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i]! << 8
      digits[i] = carry % 58
      carry = (carry / 58) | 0
    }
    while (carry > 0) {
      digits.push(carry % 58)
      carry = (carry / 58) | 0
    }
  }
  let out = ""
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) out += "1"
  for (let i = digits.length - 1; i >= 0; i--) out += BASE58[digits[i]!]
  return out
}

// Secrets' random bytes, drawn from the CSPRNG 4 KiB at a time (as Node's randomUUID pools its
// entropy): a draw per key was ~6% of a createKey request's CPU. Each byte is handed out once.
const secretPool = Buffer.alloc(4096)
let secretPooled = 0

/** `byteLength` fresh random bytes, a view of the pool valid until the next draw. */
const secretBytes = (byteLength: number): Uint8Array => {
  if (secretPooled < byteLength) {
    Crypto.randomFillSync(secretPool)
    secretPooled = secretPool.length
  }
  secretPooled -= byteLength
  return secretPool.subarray(secretPooled, secretPooled + byteLength)
}

/** A new secret: `prefix_` (when a prefix is given) and `byteLength` random bytes in base58. */
export const generateSecret = (prefix: string | undefined, byteLength: number): string => {
  const bytes = secretBytes(byteLength)
  const random = base58(bytes)
  // Zeroed once encoded: the pool never holds the bytes of a secret already given.
  bytes.fill(0)
  return prefix === undefined ? random : `${prefix}_${random}`
}

/** What a key's `start` shows of its secret: the prefix and 4 characters of the random part. */
export const startOf = (secret: string, prefix: string | undefined): string =>
  prefix === undefined ? secret.slice(0, 4) : secret.slice(0, prefix.length + 5)
