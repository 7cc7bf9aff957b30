/**
 * Tokens of the SQL subset. Outside string literals only ASCII is accepted, so no look-alike
 * letter can spell a name the binder would read differently; comments are skipped.
 */
export type TokenKind = "ident" | "quoted" | "number" | "string" | "op" | "end"

export interface Token {
  readonly kind: TokenKind
  /** Identifiers and keywords as written; strings unescaped; numbers and operators as written. */
  readonly text: string
  readonly at: number
  readonly end: number
}

/** A lexing fault at an offset. */
export class LexError {
  constructor(readonly message: string, readonly at: number) {}
}

const isIdentStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
const isDigit = (c: number) => c >= 48 && c <= 57
const isIdentPart = (c: number) => isIdentStart(c) || isDigit(c)

const OPERATORS = [
  "<=",
  ">=",
  "!=",
  "<>",
  "==",
  "||",
  "=",
  "<",
  ">",
  "+",
  "-",
  "*",
  "/",
  "%",
  "(",
  ")",
  ",",
  ".",
  "[",
  "]",
  ";"
]

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "0": "\0",
  "\\": "\\",
  "'": "'",
  "\"": "\"",
  "`": "`",
  b: "\b",
  f: "\f"
}

const describe = (char: string) => {
  const code = char.codePointAt(0)!
  return `'${char}' (U+${code.toString(16).toUpperCase().padStart(4, "0")})`
}

/** The tokens of `text`, ending with an `end` token. */
export const tokenize = (text: string): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      i++
      continue
    }
    if (c === 45 && text.charCodeAt(i + 1) === 45) {
      while (i < n && text.charCodeAt(i) !== 10) i++
      continue
    }
    if (c === 47 && text.charCodeAt(i + 1) === 42) {
      const close = text.indexOf("*/", i + 2)
      if (close < 0) throw new LexError("unterminated comment", i)
      i = close + 2
      continue
    }
    const start = i
    if (isIdentStart(c)) {
      while (i < n && isIdentPart(text.charCodeAt(i))) i++
      tokens.push({ kind: "ident", text: text.slice(start, i), at: start, end: i })
      continue
    }
    if (isDigit(c) || (c === 46 && isDigit(text.charCodeAt(i + 1)))) {
      while (i < n && isDigit(text.charCodeAt(i))) i++
      if (text.charCodeAt(i) === 46) {
        i++
        while (i < n && isDigit(text.charCodeAt(i))) i++
      }
      const e = text.charCodeAt(i)
      if (e === 101 || e === 69) {
        let j = i + 1
        if (text[j] === "+" || text[j] === "-") j++
        if (isDigit(text.charCodeAt(j))) {
          i = j
          while (i < n && isDigit(text.charCodeAt(i))) i++
        }
      }
      if (i < n && isIdentPart(text.charCodeAt(i))) {
        throw new LexError(`malformed number '${text.slice(start, i + 1)}'`, start)
      }
      tokens.push({ kind: "number", text: text.slice(start, i), at: start, end: i })
      continue
    }
    if (c === 39 || c === 34 || c === 96) {
      const quote = text[i]!
      let value = ""
      i++
      for (;;) {
        if (i >= n) throw new LexError(quote === "'" ? "unterminated string" : "unterminated quoted identifier", start)
        const ch = text[i]!
        if (ch === "\\") {
          const next = text[i + 1]
          if (next === undefined) throw new LexError("unterminated string", start)
          const escaped = ESCAPES[next]
          if (escaped === undefined) throw new LexError(`unsupported escape '\\${next}'`, i)
          value += escaped
          i += 2
        } else if (ch === quote) {
          if (text[i + 1] === quote) {
            value += quote
            i += 2
          } else {
            i++
            break
          }
        } else {
          value += ch
          i++
        }
      }
      if (quote !== "'") {
        if (value.length === 0) throw new LexError("empty quoted identifier", start)
        for (const ch of value) {
          if (ch.charCodeAt(0) > 126 || ch.charCodeAt(0) < 32) {
            throw new LexError(`unexpected character ${describe(ch)} in a quoted identifier`, start)
          }
        }
      }
      tokens.push({ kind: quote === "'" ? "string" : "quoted", text: value, at: start, end: i })
      continue
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i))
    if (op !== undefined) {
      tokens.push({ kind: "op", text: op, at: start, end: i + op.length })
      i += op.length
      continue
    }
    throw new LexError(`unexpected character ${describe(String.fromCodePoint(text.codePointAt(i)!))}`, i)
  }
  tokens.push({ kind: "end", text: "", at: n, end: n })
  return tokens
}
