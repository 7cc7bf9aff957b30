import { describe, expect, it } from "@effect/vitest"
import { generateSecret, MAX_BYTE_LENGTH, startOf } from "@keymeter/core/KeySecret"

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

/** The bytes a base58 text stands for. */
const decode = (text: string): Uint8Array => {
  let value = 0n
  for (const char of text) value = value * 58n + BigInt(BASE58.indexOf(char))
  const bytes: Array<number> = []
  while (value > 0n) {
    bytes.unshift(Number(value & 255n))
    value >>= 8n
  }
  let zeros = 0
  while (text[zeros] === "1") zeros++
  return Uint8Array.from([...Array(zeros).fill(0), ...bytes])
}

describe("KeySecret", () => {
  it("makes secrets of the asked length, each new, across many draws of the random pool", () => {
    const seen = new Set<string>()
    const bytes = new Array<number>(256).fill(0)
    for (let i = 0; i < 5_000; i++) {
      const length = i % 3 === 0 ? MAX_BYTE_LENGTH : 16
      const secret = generateSecret(i % 2 === 0 ? "sk" : undefined, length)
      const random = i % 2 === 0 ? secret.slice("sk_".length) : secret
      if (i % 2 === 0) expect(secret.startsWith("sk_")).toBe(true)
      const decoded = decode(random)
      expect(decoded.length).toBe(length)
      for (const byte of decoded) bytes[byte]!++
      expect(seen.has(secret)).toBe(false)
      seen.add(secret)
      expect(startOf(secret, i % 2 === 0 ? "sk" : undefined).length).toBe(i % 2 === 0 ? 7 : 4)
    }
    // Every byte value is drawn about as often as the others (a pool handed out twice, or zeroed
    // bytes handed out, would skew this): ~5,000 draws of each of the 256 values.
    const mean = bytes.reduce((a, b) => a + b, 0) / 256
    for (const count of bytes) expect(Math.abs(count - mean) / mean).toBeLessThan(0.1)
  })
})
