/**
 * Identifiers: a prefix, an underscore and 26 Crockford base-32 characters (48 bits of time in ms,
 * then 80 random bits, as in ULID). Ids made later sort after ids made earlier, as strings: within
 * one millisecond (or if the clock steps back) the random part is incremented, as ULID's monotonic
 * mode does, so creation order is id order in a process.
 */
import { randomFillSync } from "node:crypto"

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/** The prefixes of every kind of id. */
export const Prefix = {
  workspace: "ws",
  api: "api",
  namespace: "rlns",
  override: "rlor",
  rootKey: "rk",
  request: "req",
  batch: "batch",
  key: "key",
  identity: "id",
  permission: "perm",
  role: "role"
} as const

let lastTime = -1
const lastRandom = Buffer.alloc(10)

// Random bytes drawn 4 KiB at a time: a draw per id cost a few percent of a write request's CPU.
// Ids are not secrets, only unlikely to collide across processes (secrets have a pool of their own).
const pool = Buffer.alloc(4096)
let pooled = 0

/** Fills {@link lastRandom} with 80 fresh random bits. */
const drawRandom = () => {
  if (pooled < 10) {
    randomFillSync(pool)
    pooled = pool.length
  }
  pooled -= 10
  pool.copy(lastRandom, 0, pooled, pooled + 10)
}

/** Adds one to a big-endian number; false when it overflowed. */
const increment = (bytes: Buffer): boolean => {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 255) {
      bytes[i]!++
      return true
    }
    bytes[i] = 0
  }
  return false
}

/** Makes an id with `prefix` for the time `now` (unix ms). */
export const make = (prefix: string, now: number = Date.now()): string => {
  let time = Math.max(0, Math.floor(now))
  if (time <= lastTime) {
    time = lastTime
    if (!increment(lastRandom)) {
      time = ++lastTime
      drawRandom()
    }
  } else {
    drawRandom()
  }
  lastTime = time
  const chars = new Array<string>(26)
  for (let i = 9; i >= 0; i--) {
    chars[i] = ALPHABET[time % 32]!
    time = Math.floor(time / 32)
  }
  // 80 random bits as 16 base-32 characters, 5 bits at a time.
  let buffer = 0
  let bits = 0
  let index = 10
  for (const byte of lastRandom) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      bits -= 5
      chars[index++] = ALPHABET[(buffer >>> bits) & 31]!
    }
    buffer &= (1 << bits) - 1
  }
  return `${prefix}_${chars.join("")}`
}
