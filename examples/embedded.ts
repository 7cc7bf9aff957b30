/**
 * Embedding keymeter in an existing node:http service that does not use Effect.
 *
 *   node --conditions=@keymeter/source --import tsx examples/embedded.ts
 *
 * The service verifies its own API keys on /hello and records every outcome with
 * `keymeter.record`; /usage reads the counts back per day; the keymeter HTTP API (with its /docs)
 * is mounted under /keymeter for dashboards, behind root keys.
 */
import { createKeymeter } from "keymeter"
import { createServer } from "node:http"

const port = Number(process.env.PORT ?? 3000)
const host = process.env.HOST ?? "127.0.0.1"

const keymeter = await createKeymeter({ storage: process.env.KEYMETER_STORAGE ?? "memory" })
const { apiId } = await keymeter.createApi({ name: "hello-service" })
const { key: readerKey } = await keymeter.createRootKey({ name: "dashboard", permissions: ["api.*.read_api"] })
const keymeterApi = keymeter.handler({ prefix: "/keymeter" })

// The host service's own API keys; keymeter only counts what happens to them.
const customerKeys = new Map([["key_alice", "alice"], ["key_bob", "bob"]])

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", `http://${req.headers.host}`)
  if (url.pathname.startsWith("/keymeter")) return keymeterApi(req, res)
  if (url.pathname === "/hello") {
    const keyId = req.headers["x-api-key"]
    const owner = typeof keyId === "string" ? customerKeys.get(keyId) : undefined
    const outcome = owner === undefined ? "notFound" : "valid"
    keymeter.record([{
      apiId,
      keyId: typeof keyId === "string" && keyId !== "" ? keyId : "anonymous",
      outcome,
      ...(owner !== undefined ? { identity: { id: owner, externalId: owner } } : {})
    }]).then(
      () => {
        res.writeHead(owner === undefined ? 401 : 200, { "content-type": "application/json" })
        res.end(JSON.stringify(owner === undefined ? { error: "unknown key" } : { hello: owner }))
      },
      (error) => {
        res.writeHead(500).end(String(error))
      }
    )
    return
  }
  if (url.pathname === "/usage") {
    keymeter.getVerifications({ apiId, groupBy: ["day", "key"], orderBy: "total", order: "desc" }).then(
      (points) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify(points))
      },
      (error) => res.writeHead(error.status ?? 500).end(error.message)
    )
    return
  }
  res.writeHead(404).end()
})

server.listen(port, host, () => {
  const address = server.address()
  const actual = typeof address === "object" && address !== null ? address.port : port
  console.log(`READY http://${host}:${actual} apiId=${apiId} readerKey=${readerKey}`)
})

const stop = () => server.close(() => void keymeter.close())
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
