/**
 * A recursive-descent parser of the SQL subset (ClickHouse's syntax for it). What it does not know
 * it refuses by name, at the place it starts: a JOIN, a table function, SETTINGS, a parametric
 * aggregate — never a guess.
 */
import type * as Ast from "../Ast.js"
import { ExpressionParser, MAX_DEPTH, NESTING_WEIGHT, ParseError, RESERVED } from "./ExpressionParser.js"
import type { Token } from "./Lexer.js"
import { LexError, tokenize } from "./Lexer.js"

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

/** Reads statements: WITH, SELECT and its clauses, set operations, FROM's tables and subqueries. */
class Parser extends ExpressionParser {
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

  override query(): Ast.Query {
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
}

const wrap = (body: Ast.Select | Ast.SetOperation): Ast.Query => ({ _tag: "Query", at: body.at, with: [], body })
