/**
 * A recursive-descent parser of the SQL subset (ClickHouse's syntax for it). What it does not know
 * it refuses by name, at the place it starts: a JOIN, a table function, SETTINGS, a parametric
 * aggregate — never a guess.
 */
import type * as Ast from "../Ast.js"
import type { Token } from "./Lexer.js"
import { LexError, tokenize } from "./Lexer.js"

/** A parse fault at an offset. */
export class ParseError {
  constructor(readonly message: string, readonly at: number) {}
}

/** Words that end an expression or a clause: never read as an implicit alias. */
const RESERVED = new Set([
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

/**
 * Parses one query; a trailing `;` is allowed, a second statement is not. Dashboards send the same
 * texts again and again, and rollups' views are texts too: the syntax trees (immutable) of the last
 * {@link KEPT_TEXTS} texts of at most {@link KEPT_LENGTH} characters are kept, a text the parser
 * refuses never.
 */
export const parse = (text: string): Ast.Query => {
  const known = kept.get(text)
  if (known !== undefined) {
    // Most recently used last: the first is the one to forget.
    kept.delete(text)
    kept.set(text, known)
    return known
  }
  const query = parseAfresh(text)
  if (text.length <= KEPT_LENGTH) {
    kept.set(text, query)
    if (kept.size > KEPT_TEXTS) kept.delete(kept.keys().next().value!)
  }
  return query
}

const KEPT_TEXTS = 256
const KEPT_LENGTH = 8_192
const kept = new Map<string, Ast.Query>()

const parseAfresh = (text: string): Ast.Query => {
  let tokens: Array<Token>
  try {
    tokens = tokenize(text)
  } catch (error) {
    if (error instanceof LexError) throw new ParseError(error.message, error.at)
    throw error
  }
  return new Parser(text, tokens).statement()
}

/** Deepest tree accepted: each chained operator counts 1, each nested expression or query 4 (its frames). */
const MAX_DEPTH = 1000

/** What one nesting level (parenthesis, argument, subquery) counts toward {@link MAX_DEPTH}. */
const NESTING_WEIGHT = 4

class Parser {
  private i = 0
  private depth = 0
  constructor(private readonly text: string, private readonly tokens: Array<Token>) {}

  private get token(): Token {
    return this.tokens[this.i]!
  }
  private peek(ahead = 1): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)]!
  }
  private next(): Token {
    const token = this.tokens[this.i]!
    if (token.kind !== "end") this.i++
    return token
  }
  private atEnd(): boolean {
    return this.tokens[this.i]!.kind === "end"
  }
  /** End offset of the last token read. */
  private get lastEnd(): number {
    return this.i === 0 ? 0 : this.tokens[this.i - 1]!.end
  }
  private isWord(word: string, token = this.token): boolean {
    return token.kind === "ident" && token.text.toUpperCase() === word
  }
  private isOp(op: string, token = this.token): boolean {
    return token.kind === "op" && token.text === op
  }
  private acceptWord(word: string): boolean {
    if (!this.isWord(word)) return false
    this.i++
    return true
  }
  private acceptOp(op: string): boolean {
    if (!this.isOp(op)) return false
    this.i++
    return true
  }
  private fail(message: string, at = this.token.at): never {
    throw new ParseError(message, at)
  }
  private found(token = this.token): string {
    if (token.kind === "end") return "the end of the query"
    if (token.kind === "string") return `the string '${token.text}'`
    return `'${token.text}'`
  }
  private expectWord(word: string): void {
    if (!this.acceptWord(word)) this.fail(`expected ${word}, found ${this.found()}`)
  }
  private expectOp(op: string): void {
    if (!this.acceptOp(op)) this.fail(`expected '${op}', found ${this.found()}`)
  }

  statement(): Ast.Query {
    if (this.token.kind === "end") this.fail("the query is empty")
    const first = this.token
    if (!this.isWord("SELECT") && !this.isWord("WITH") && !this.isOp("(")) {
      this.fail(
        first.kind === "ident"
          ? `only SELECT queries are supported, found ${first.text.toUpperCase()}`
          : `expected SELECT, found ${this.found()}`
      )
    }
    const query = this.query()
    if (this.acceptOp(";") && !this.atEnd()) this.fail("only one statement per query")
    if (!this.atEnd()) this.refuseTrailing()
    return query
  }

  private refuseTrailing(): never {
    const token = this.token
    const word = token.kind === "ident" ? token.text.toUpperCase() : ""
    if (word === "SETTINGS" || word === "FORMAT" || word === "INTO") this.fail(`${word} is not supported`)
    if (word === "INTERSECT") this.fail("INTERSECT is not supported")
    if (word === "UNION") this.fail("UNION needs ALL or DISTINCT (UNION ALL, UNION DISTINCT)")
    if (this.isOp(";")) this.fail("only one statement per query")
    this.fail(`unexpected ${this.found()}`)
  }

  query(): Ast.Query {
    return this.nested(() => this.queryBody())
  }

  private queryBody(): Ast.Query {
    const at = this.token.at
    const ctes: Array<Ast.Cte> = []
    if (this.acceptWord("WITH")) {
      do {
        const name = this.token
        if (name.kind !== "ident" && name.kind !== "quoted") {
          this.fail(`expected a name after WITH, found ${this.found()}`)
        }
        if (!this.isWord("AS", this.peek()) || !this.isOp("(", this.peek(2))) {
          this.fail("only WITH <name> AS (<query>) is supported (not WITH <expression> AS <name>)", name.at)
        }
        this.i += 3
        const query = this.query()
        this.expectOp(")")
        ctes.push({ at: name.at, name: name.text, query })
      } while (this.acceptOp(","))
    }
    return { _tag: "Query", at, with: ctes, body: this.setExpression() }
  }

  private setExpression(): Ast.Select | Ast.SetOperation {
    let left: Ast.Select | Ast.SetOperation = this.setOperand()
    for (let chain = 0;; chain++) {
      if (chain > MAX_DEPTH / NESTING_WEIGHT) this.fail("the query chains too many set operations")
      const at = this.token.at
      let op: Ast.SetOperation["op"]
      if (this.acceptWord("UNION")) {
        if (this.acceptWord("ALL")) op = "UNION ALL"
        else if (this.acceptWord("DISTINCT")) op = "UNION DISTINCT"
        else this.fail("UNION needs ALL or DISTINCT (UNION ALL, UNION DISTINCT)", at)
      } else if (this.acceptWord("EXCEPT")) {
        // `EXCEPT (SELECT …)` is the set operation; `EXCEPT (a, b)` ClickHouse's column modifier.
        const inner = this.peek()
        if (this.isOp("(") && !this.isWord("SELECT", inner) && !this.isWord("WITH", inner) && !this.isOp("(", inner)) {
          this.fail("EXCEPT(<columns>) is not supported", at)
        }
        op = this.acceptWord("DISTINCT") ? "EXCEPT DISTINCT" : (this.acceptWord("ALL"), "EXCEPT")
      } else if (this.isWord("INTERSECT")) {
        this.fail("INTERSECT is not supported")
      } else return left
      const right = this.setOperand()
      left = { _tag: "SetOperation", at, op, left: wrap(left), right: wrap(right) }
    }
  }

  private setOperand(): Ast.Select | Ast.SetOperation {
    if (this.isOp("(")) {
      const at = this.token.at
      this.next()
      const inner = this.query()
      this.expectOp(")")
      // A parenthesized query without CTEs is its body; with them, a SELECT * over it keeps them scoped.
      if (inner.with.length === 0) return inner.body
      return {
        _tag: "Select",
        at,
        distinct: false,
        items: [{ expr: { _tag: "Column", at, table: undefined, name: "*" }, alias: undefined, text: "*" }],
        from: { _tag: "Subquery", at, query: inner, alias: undefined },
        where: undefined,
        groupBy: [],
        having: undefined,
        orderBy: [],
        limit: undefined,
        offset: undefined
      }
    }
    return this.select()
  }

  private select(): Ast.Select {
    const at = this.token.at
    this.expectWord("SELECT")
    const distinct = this.acceptWord("DISTINCT")
    // `SELECT TOP 10 …`; a column or CTE named top (`SELECT top.n`) is read as a name.
    if (this.isWord("TOP") && (this.peek().kind === "number" || this.isOp("(", this.peek()))) {
      this.fail("SELECT TOP is not supported: use LIMIT")
    }
    const items: Array<Ast.SelectItem> = []
    do items.push(this.selectItem())
    while (this.acceptOp(","))
    let from: Ast.From | undefined
    if (this.acceptWord("FROM")) from = this.from()
    for (const word of ["ARRAY", "LEFT", "RIGHT", "INNER", "FULL", "CROSS", "JOIN", "GLOBAL", "ANY", "ASOF", "PASTE"]) {
      if (this.isWord(word)) {
        this.fail(word === "ARRAY" ? "ARRAY JOIN is not supported: use arrayJoin()" : "JOIN is not supported")
      }
    }
    if (this.isOp(",")) this.fail("reading several tables (a comma join) is not supported")
    if (this.isWord("PREWHERE")) this.fail("PREWHERE is not supported: use WHERE")
    const where = this.acceptWord("WHERE") ? this.expr() : undefined
    const groupBy: Array<Ast.Expr> = []
    if (this.acceptWord("GROUP")) {
      this.expectWord("BY")
      if (this.isWord("ALL")) this.fail("GROUP BY ALL is not supported")
      do groupBy.push(this.expr())
      while (this.acceptOp(","))
      if (this.isWord("WITH")) this.fail(`GROUP BY … WITH ${this.peek().text.toUpperCase()} is not supported`)
    }
    const having = this.acceptWord("HAVING") ? this.expr() : undefined
    if (this.isWord("WINDOW") || this.isWord("QUALIFY")) this.fail(`${this.token.text.toUpperCase()} is not supported`)
    const orderBy: Array<Ast.OrderItem> = []
    if (this.acceptWord("ORDER")) {
      this.expectWord("BY")
      do {
        const expr = this.expr()
        const descending = this.acceptWord("DESC") || this.acceptWord("DESCENDING")
        if (!descending && !this.acceptWord("ASC")) this.acceptWord("ASCENDING")
        if (this.isWord("NULLS") || this.isWord("COLLATE")) {
          this.fail(`ORDER BY … ${this.token.text.toUpperCase()} is not supported`)
        }
        if (this.isWord("WITH")) this.fail("ORDER BY … WITH FILL is not supported")
        orderBy.push({ expr, descending })
      } while (this.acceptOp(","))
    }
    let limit: Ast.Expr | undefined
    let offset: Ast.Expr | undefined
    if (this.acceptWord("LIMIT")) {
      limit = this.expr()
      if (this.acceptOp(",")) {
        offset = limit
        limit = this.expr()
      } else if (this.acceptWord("OFFSET")) offset = this.expr()
      if (this.isWord("BY")) this.fail("LIMIT … BY is not supported")
      if (this.isWord("WITH")) this.fail("LIMIT … WITH TIES is not supported")
    }
    if (offset === undefined && this.acceptWord("OFFSET")) {
      offset = this.expr()
      if (!this.acceptWord("ROWS")) this.acceptWord("ROW")
    }
    if (this.isWord("FETCH")) this.fail("FETCH is not supported: use LIMIT")
    return { _tag: "Select", at, distinct, items, from, where, groupBy, having, orderBy, limit, offset }
  }

  private selectItem(): Ast.SelectItem {
    const start = this.token.at
    if (this.isOp("*")) {
      this.next()
      if (this.isWord("EXCEPT") && this.isOp("(", this.peek())) this.fail("* EXCEPT(…) is not supported")
      return { expr: { _tag: "Column", at: start, table: undefined, name: "*" }, alias: undefined, text: "*" }
    }
    const expr = this.expr()
    const text = this.text.slice(start, this.lastEnd).replace(/\s+/g, " ")
    return { expr, alias: this.alias(), text }
  }

  /** `AS name`, or a bare name that is not a keyword. */
  private alias(): string | undefined {
    if (this.acceptWord("AS")) {
      const token = this.next()
      if (token.kind !== "ident" && token.kind !== "quoted") {
        this.fail(`expected a name after AS, found ${this.found(token)}`, token.at)
      }
      return token.text
    }
    const token = this.token
    if (token.kind === "quoted" || (token.kind === "ident" && !RESERVED.has(token.text.toUpperCase()))) {
      this.next()
      return token.text
    }
    return undefined
  }

  private from(): Ast.From {
    const at = this.token.at
    if (this.acceptOp("(")) {
      if (!this.isWord("SELECT") && !this.isWord("WITH") && !this.isOp("(")) {
        this.fail(`expected a subquery, found ${this.found()}`)
      }
      const query = this.query()
      this.expectOp(")")
      return { _tag: "Subquery", at, query, alias: this.alias() }
    }
    const token = this.next()
    if (token.kind !== "ident" && token.kind !== "quoted") {
      this.fail(`expected a table, found ${this.found(token)}`, token.at)
    }
    if (this.isOp("(")) this.fail(`table functions are not supported (${token.text}(…))`, token.at)
    let name = token.text
    if (this.isOp(".")) {
      this.next()
      const part = this.next()
      if (part.kind !== "ident" && part.kind !== "quoted") {
        this.fail(`expected a table name after '.', found ${this.found(part)}`, part.at)
      }
      name = `${name}.${part.text}`
    }
    if (this.isWord("FINAL") || this.isWord("SAMPLE")) this.fail(`${this.token.text.toUpperCase()} is not supported`)
    return { _tag: "Table", at: token.at, name, alias: this.alias() }
  }

  expr(): Ast.Expr {
    return this.nested(() => this.or())
  }

  /** Each operator of a chain is a level of the tree: counted with the nesting. */
  private chain(): void {
    if (++this.depth > MAX_DEPTH) this.fail("the query nests too deeply")
  }

  /** Ends a chain of `length` operators. */
  private unchain(length: number): void {
    this.depth -= length
  }

  private nested<A>(f: () => A): A {
    this.depth += NESTING_WEIGHT
    try {
      if (this.depth > MAX_DEPTH) this.fail("the query nests too deeply")
      return f()
    } finally {
      this.depth -= NESTING_WEIGHT
    }
  }

  private or(): Ast.Expr {
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

  private and(): Ast.Expr {
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

  private not(): Ast.Expr {
    if (this.isWord("NOT")) {
      const at = this.next().at
      return { _tag: "Unary", at, op: "NOT", operand: this.nested(() => this.not()) }
    }
    return this.comparison()
  }

  private comparison(): Ast.Expr {
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

  private additive(): Ast.Expr {
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

  private multiplicative(): Ast.Expr {
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

  private unary(): Ast.Expr {
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

  private primary(): Ast.Expr {
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

  private name(): Ast.Column {
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

  private call(): Ast.Call {
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

  private caseExpr(): Ast.Case {
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

const wrap = (body: Ast.Select | Ast.SetOperation): Ast.Query => ({ _tag: "Query", at: body.at, with: [], body })
