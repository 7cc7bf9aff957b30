/**
 * SELECTs over ClickHouse's HTTP interface with Node's own `http`/`https`, on kept-alive sockets.
 * `@clickhouse/client` waits a timer turn (`setTimeout(0)`, at least 1 ms) before each request,
 * which on loopback was most of a small read's cost (a 30-row answer: 3.2 ms through the client,
 * 1.6 ms without it); reads are what `getVerifications` waits for, so they skip it. Writes and DDL
 * stay on the client. Answers are JSONCompact (the newest row format 18.16 has) with 64-bit
 * integers as JSON numbers, or Native blocks (see `NativeReader`); errors are the client's
 * (`parseError`), so they read the same.
 */
import { parseError } from "@clickhouse/client"
import * as http from "node:http"
import * as https from "node:https"
import type { Block } from "./NativeReader.js"
import { NativeReader } from "./NativeReader.js"

export interface Options {
  /** `http(s)://host:port`. */
  readonly url: string
  readonly database: string | undefined
  readonly username: string
  readonly password: string
  readonly requestTimeoutMs: number
}

/**
 * Bytes of a Native answer ClickHouse holds in memory until the query ends (a datapoint is
 * about 80 bytes: this holds a hundred hours of a hundred keys).
 */
export const ANSWER_BUFFER_BYTES = 1 << 20

/** How often a request is sent again after its connection was reset (see `answer`, `Connection`). */
export const RESENDS = 3

/** Runs SELECTs on `options`' server; `close` ends its idle sockets. */
export const make = (options: Options) => {
  const url = new URL(options.url)
  const secure = url.protocol === "https:"
  const agent = secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true })
  const authorization = "Basic " + Buffer.from(`${options.username}:${options.password}`).toString("base64")
  const base = `${url.pathname.replace(/\/+$/, "")}/?${new URLSearchParams({
    ...(options.database !== undefined ? { database: options.database } : {}),
    output_format_json_quote_64bit_integers: "0"
  })}`
  // ClickHouse writes the answer once the query has run to its end: an error midway is a failed
  // request (without it: 200, the rows so far, then the error's text). It holds the answer in
  // memory up to `buffer_size` bytes and the rest in a temporary file; without a size, all of it
  // went to the file: 2.4 ms more for a 170 KB answer (2,160 hourly rows) on the bench's VM.
  const wholeAnswer = `${base}&buffer_size=${ANSWER_BUFFER_BYTES}&wait_end_of_query=1`
  const pathOf = (settings: Readonly<Record<string, string | number>> | undefined) =>
    settings === undefined
      ? base
      : `${base}&${new URLSearchParams(Object.entries(settings).map(([k, v]): [string, string] => [k, String(v)]))}`

  const once = (text: string, path: string, format: string) =>
    new Promise<Buffer>((resolve, reject) => {
      const request = (secure ? https : http).request({
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        path,
        method: "POST",
        agent,
        headers: { authorization, "content-type": "text/plain; charset=UTF-8" }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("error", reject)
        response.on("end", () => {
          const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
          if (response.statusCode !== 200) return reject(parseError(body.toString("utf8").trimEnd()))
          resolve(body)
        })
      })
      request.setTimeout(options.requestTimeoutMs, () => request.destroy(new Error("Timeout error.")))
      request.on("error", (error) => reject(Object.assign(error, { reusedSocket: request.reusedSocket })))
      request.end(`${text}\nFORMAT ${format}`)
    })

  /**
   * The answer of `text` in `format`, sent again (at most `RESENDS` times) when it went out on a
   * kept-alive socket the server had closed meanwhile: a SELECT can be.
   */
  const answer = async (text: string, path: string, format: string, resends = RESENDS): Promise<Buffer> => {
    try {
      return await once(text, path, format)
    } catch (error) {
      if (resends > 0 && (error as { reusedSocket?: unknown }).reusedSocket === true) {
        return answer(text, path, format, resends - 1)
      }
      throw error
    }
  }

  return {
    /** The rows of `text` (a SELECT without FORMAT), as arrays in column order. */
    query: async (text: string, settings?: Readonly<Record<string, string | number>>) =>
      (JSON.parse((await answer(text, pathOf(settings), "JSONCompact")).toString("utf8")) as {
        data: Array<Array<unknown>>
      }).data,
    /** The blocks (those with rows) of `text`'s answer, written once the query has run to its end. */
    queryBlocks: async (text: string): Promise<Array<Block>> => {
      const reader = new NativeReader(await answer(text, wholeAnswer, "Native"))
      const blocks: Array<Block> = []
      while (!reader.done) {
        const block = reader.block(false)
        if (block.rows > 0) blocks.push(block)
      }
      return blocks
    },
    close: () => agent.destroy()
  }
}
