/**
 * The expressions of the SQL subset (ClickHouse's syntax for them), and what a recursive-descent
 * parser of its queries needs: a cursor over the tokens, faults at a place, the nesting bound.
 * `Parser` reads the statements around them; a subquery inside an expression is its `query`.
 */
import type * as Ast from "../Ast.js"
import type { Token } from "./Lexer.js"

/** A parse fault at an offset. */
export class ParseError {
  constructor(readonly message: string, readonly at: number) {}
}

/** Words that end an expression or a clause: never read as an implicit alias. */
export const RESERVED = new Set([
  "ALL",
  "AND",
  "ANY",
  "ARRAY",
  "AS",
  "ASC",
  "BETWEEN",
  "BY",
  "CASE",
  "CROSS",
  "DESC",
  "DISTINCT",
  "ELSE",
  "END",
  "EXCEPT",
  "FINAL",
  "FORMAT",
  "FROM",
  "FULL",
  "GLOBAL",
  "GROUP",
  "HAVING",
  "ILIKE",
  "IN",
  "INNER",
  "INTERSECT",
  "INTERVAL",
  "INTO",
  "IS",
  "JOIN",
  "LEFT",
  "LIKE",
  "LIMIT",
  "NOT",
  "NULL",
  "OFFSET",
  "ON",
  "OR",
  "ORDER",
  "PREWHERE",
  "QUALIFY",
  "RIGHT",
  "SAMPLE",
  "SELECT",
  "SETTINGS",
  "THEN",
  "UNION",
  "USING",
  "WHEN",
  "WHERE",
  "WINDOW",
  "WITH",
  "OUTER",
  "PASTE",
  "ASOF",
  "SEMI",
  "ANTI",
  "NULLS"
])

const UNITS: Record<string, Ast.IntervalUnit> = {
  SECOND: "SECOND",
  SECONDS: "SECOND",
  MINUTE: "MINUTE",
  MINUTES: "MINUTE",
  HOUR: "HOUR",
  HOURS: "HOUR",
  DAY: "DAY",
  DAYS: "DAY",
  WEEK: "WEEK",
  WEEKS: "WEEK",
  MONTH: "MONTH",
  MONTHS: "MONTH",
  QUARTER: "QUARTER",
  QUARTERS: "QUARTER",
  YEAR: "YEAR",
  YEARS: "YEAR"
}

const COMPARISONS: Record<string, Ast.BinaryOp> = {
  "=": "=",
  "==": "=",
  "!=": "!=",
  "<>": "!=",
  "<": "<",
  "<=": "<=",
  ">": ">",
  ">=": ">="
}

/** Deepest tree accepted: each chained operator counts 1, each nested expression or query 4 (its frames). */
export const MAX_DEPTH = 1000

/** What one nesting level (parenthesis, argument, subquery) counts toward {@link MAX_DEPTH}. */
export const NESTING_WEIGHT = 4

/** Reads expressions; what reads queries (for subqueries) is the subclass's `query`. */
export abstract class ExpressionParser {
  protected i = 0
  private depth = 0
  constructor(protected readonly text: string, private readonly tokens: Array<Token>) {}

  protected get token(): Token {
    return this.tokens[this.i]!
  }
  protected peek(ahead = 1): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)]!
  }
  protected next(): Token {
    const token = this.tokens[this.i]!
    if (token.kind !== "end") this.i++
    return token
  }
  protected atEnd(): boolean {
    return this.tokens[this.i]!.kind === "end"
  }
  /** End offset of the last token read. */
  protected get lastEnd(): number {
    return this.i === 0 ? 0 : this.tokens[this.i - 1]!.end
  }
  protected isWord(word: string, token = this.token): boolean {
    return token.kind === "ident" && token.text.toUpperCase() === word
  }
  protected isOp(op: string, token = this.token): boolean {
    return token.kind === "op" && token.text === op
  }
  protected acceptWord(word: string): boolean {
    if (!this.isWord(word)) return false
    this.i++
    return true
  }
  protected acceptOp(op: string): boolean {
    if (!this.isOp(op)) return false
    this.i++
    return true
  }
  protected fail(message: string, at = this.token.at): never {
    throw new ParseError(message, at)
  }
  protected found(token = this.token): string {
    if (token.kind === "end") return "the end of the query"
    if (token.kind === "string") return `the string '${token.text}'`
    return `'${token.text}'`
  }
  protected expectWord(word: string): void {
    if (!this.acceptWord(word)) this.fail(`expected ${word}, found ${this.found()}`)
  }
  protected expectOp(op: string): void {
    if (!this.acceptOp(op)) this.fail(`expected '${op}', found ${this.found()}`)
  }

  /** A query, where an expression holds one (a subquery). */
  protected abstract query(): Ast.Query

  expr(): Ast.Expr {
    return this.nested(() => this.or())
  }

  /** Each operator of a chain is a level of the tree: counted with the nesting. */
  protected chain(): void {
    if (++this.depth > MAX_DEPTH) this.fail("the query nests too deeply")
  }

  /** Ends a chain of `length` operators. */
  protected unchain(length: number): void {
    this.depth -= length
  }

  protected nested<A>(f: () => A): A {
    this.depth += NESTING_WEIGHT
    try {
      if (this.depth > MAX_DEPTH) this.fail("the query nests too deeply")
      return f()
    } finally {
      this.depth -= NESTING_WEIGHT
    }
  }

  protected or(): Ast.Expr {
    let left = this.and()
    let chain = 0
    for (; this.isWord("OR"); chain++) {
      this.chain()
      const at = this.next().at
      left = { _tag: "Binary", at, op: "OR", left, right: this.and() }
    }
    this.unchain(chain)
    return left
  }

  protected and(): Ast.Expr {
    let left = this.not()
    let chain = 0
    for (; this.isWord("AND"); chain++) {
      this.chain()
      const at = this.next().at
      left = { _tag: "Binary", at, op: "AND", left, right: this.not() }
    }
    this.unchain(chain)
    return left
  }

  protected not(): Ast.Expr {
    if (this.isWord("NOT")) {
      const at = this.next().at
      return { _tag: "Unary", at, op: "NOT", operand: this.nested(() => this.not()) }
    }
    return this.comparison()
  }

  protected comparison(): Ast.Expr {
    const left = this.additive()
    const token = this.token
    const at = token.at
    if (token.kind === "op" && COMPARISONS[token.text] !== undefined) {
      this.next()
      return { _tag: "Binary", at, op: COMPARISONS[token.text]!, left, right: this.additive() }
    }
    if (this.isWord("IS")) {
      this.next()
      const not = this.acceptWord("NOT")
      this.expectWord("NULL")
      return { _tag: "IsNull", at, expr: left, not }
    }
    const not = this.isWord("NOT") && (this.isWord("IN", this.peek()) || this.isWord("LIKE", this.peek()) ||
      this.isWord("ILIKE", this.peek()) || this.isWord("BETWEEN", this.peek()))
    if (not) this.next()
    if (this.acceptWord("GLOBAL")) this.fail("GLOBAL IN is not supported", at)
    if (this.acceptWord("IN")) {
      this.expectOp("(")
      if (this.isWord("SELECT") || this.isWord("WITH")) {
        const query = this.query()
        this.expectOp(")")
        return { _tag: "InQuery", at, expr: left, query, not }
      }
      const items: Array<Ast.Expr> = []
      if (!this.isOp(")")) {
        do items.push(this.expr())
        while (this.acceptOp(","))
      }
      this.expectOp(")")
      return { _tag: "InList", at, expr: left, items, not }
    }
    if (this.isWord("LIKE") || this.isWord("ILIKE")) {
      const caseInsensitive = this.next().text.toUpperCase() === "ILIKE"
      return { _tag: "Like", at, expr: left, pattern: this.additive(), not, caseInsensitive }
    }
    if (this.acceptWord("BETWEEN")) {
      const low = this.additive()
      this.expectWord("AND")
      return { _tag: "Between", at, expr: left, low, high: this.additive(), not }
    }
    if (not) this.fail("expected IN, LIKE, ILIKE or BETWEEN after NOT")
    return left
  }

  protected additive(): Ast.Expr {
    let left = this.multiplicative()
    let chain = 0
    for (; this.isOp("+") || this.isOp("-") || this.isOp("||"); chain++) {
      this.chain()
      const token = this.next()
      left = { _tag: "Binary", at: token.at, op: token.text as Ast.BinaryOp, left, right: this.multiplicative() }
    }
    this.unchain(chain)
    return left
  }

  protected multiplicative(): Ast.Expr {
    let left = this.unary()
    let chain = 0
    for (; this.isOp("*") || this.isOp("/") || this.isOp("%"); chain++) {
      this.chain()
      const token = this.next()
      left = { _tag: "Binary", at: token.at, op: token.text as Ast.BinaryOp, left, right: this.unary() }
    }
    this.unchain(chain)
    return left
  }

  protected unary(): Ast.Expr {
    if (this.isOp("-")) {
      const at = this.next().at
      const operand = this.nested(() => this.unary())
      if (operand._tag === "Literal" && typeof operand.value === "number") {
        return { _tag: "Literal", at, value: -operand.value, integer: operand.integer }
      }
      return { _tag: "Unary", at, op: "-", operand }
    }
    if (this.isOp("+")) {
      this.next()
      return this.nested(() => this.unary())
    }
    const expr = this.primary()
    if (this.isOp("[")) this.fail("array subscripts are not supported")
    if (this.isOp("::")) this.fail("'::' casts are not supported")
    return expr
  }

  protected primary(): Ast.Expr {
    const token = this.token
    const at = token.at
    switch (token.kind) {
      case "number": {
        this.next()
        const integer = /^\d+$/.test(token.text)
        const value = Number(token.text)
        if (integer && !Number.isSafeInteger(value)) this.fail(`the number ${token.text} is too large`, at)
        return { _tag: "Literal", at, value, integer }
      }
      case "string":
        this.next()
        return { _tag: "Literal", at, value: token.text, integer: false }
      case "op": {
        if (token.text === "(") {
          this.next()
          if (this.isWord("SELECT") || this.isWord("WITH")) {
            this.fail("scalar subqueries are not supported: use IN (SELECT …) or a subquery in FROM", at)
          }
          const inner = this.expr()
          if (this.isOp(",")) this.fail("tuples are not supported")
          this.expectOp(")")
          return inner
        }
        if (token.text === "[") {
          this.next()
          const items: Array<Ast.Expr> = []
          if (!this.isOp("]")) {
            do items.push(this.expr())
            while (this.acceptOp(","))
          }
          this.expectOp("]")
          return { _tag: "ArrayLiteral", at, items }
        }
        if (token.text === "*") this.fail("'*' is only allowed as a whole SELECT item or in count(*)")
        return this.fail(`unexpected ${this.found()}`)
      }
      case "end":
        return this.fail("the query ends in the middle of an expression")
      case "quoted":
        return this.name()
      case "ident":
        break
    }
    const word = token.text.toUpperCase()
    if (word === "NULL") {
      this.next()
      return { _tag: "Literal", at, value: null, integer: false }
    }
    if (word === "TRUE" || word === "FALSE") {
      this.next()
      return { _tag: "Literal", at, value: word === "TRUE" ? 1 : 0, integer: true }
    }
    if (word === "CASE") return this.caseExpr()
    if (word === "INTERVAL") {
      this.next()
      if (this.token.kind === "string") this.fail("INTERVAL '…' strings are not supported: write INTERVAL 7 DAY")
      const value = this.unary()
      const unit = this.token.kind === "ident" ? UNITS[this.token.text.toUpperCase()] : undefined
      if (unit === undefined) {
        this.fail(
          `expected an interval unit (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR), found ${this.found()}`
        )
      }
      this.next()
      return { _tag: "Interval", at, value, unit }
    }
    if (word === "CAST") this.fail("CAST is not supported: use toString, toInt64 or toFloat64")
    if (word === "EXISTS" && this.isOp("(", this.peek())) this.fail("EXISTS is not supported: use IN (SELECT …)")
    if (RESERVED.has(word) && !this.isOp("(", this.peek())) this.fail(`unexpected ${word}`)
    if (this.isOp("(", this.peek())) return this.call()
    return this.name()
  }

  protected name(): Ast.Column {
    const token = this.next()
    if (this.isOp(".")) {
      this.next()
      const column = this.next()
      if (column.kind === "op" && column.text === "*") this.fail("t.* is not supported: use *", token.at)
      if (column.kind !== "ident" && column.kind !== "quoted") {
        this.fail(`expected a column after '.', found ${this.found(column)}`, column.at)
      }
      if (this.isOp(".")) this.fail("names have at most two parts (table.column)")
      return { _tag: "Column", at: token.at, table: token.text, name: column.text }
    }
    return { _tag: "Column", at: token.at, table: undefined, name: token.text }
  }

  protected call(): Ast.Call {
    const nameToken = this.next()
    this.expectOp("(")
    const at = nameToken.at
    if (this.acceptOp("*")) {
      this.expectOp(")")
      return { _tag: "Call", at, name: nameToken.text, args: [], distinct: false, star: true }
    }
    const distinct = this.acceptWord("DISTINCT")
    const args: Array<Ast.Expr> = []
    if (!this.isOp(")")) {
      do args.push(this.expr())
      while (this.acceptOp(","))
    }
    this.expectOp(")")
    if (this.isOp("(")) this.fail(`parametric functions are not supported (${nameToken.text}(…)(…))`, at)
    if (this.isWord("OVER")) this.fail("window functions (OVER) are not supported")
    return { _tag: "Call", at, name: nameToken.text, args, distinct, star: false }
  }

  protected caseExpr(): Ast.Case {
    const at = this.next().at
    const operand = this.isWord("WHEN") ? undefined : this.expr()
    const whens: Array<{ when: Ast.Expr; then: Ast.Expr }> = []
    while (this.acceptWord("WHEN")) {
      const when = this.expr()
      this.expectWord("THEN")
      whens.push({ when, then: this.expr() })
    }
    if (whens.length === 0) this.fail("CASE needs at least one WHEN")
    const otherwise = this.acceptWord("ELSE") ? this.expr() : undefined
    this.expectWord("END")
    return { _tag: "Case", at, operand, whens, otherwise }
  }
}
