import { createKeymeter } from "keymeter"
import { createServer } from "node:http"
import { writeFileSync } from "node:fs"
const km = await createKeymeter({ storage: process.argv[2] ?? "memory" })
const { apiId } = await km.createApi({ name: "one" })
const root = await km.createRootKey({ permissions: ["*"] })
const h = km.handler()
const server = createServer((req, res) => h(req, res))
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
const secrets: string[] = []
for (let i = 0; i < 1000; i++) secrets.push((await km.keys.create({ apiId, externalId: `c_${i % 100}`, ratelimits: [{ name: "requests", limit: 1e9, duration: 60000, autoApply: true }] })).key!)
writeFileSync("/tmp/probes/srv.json", JSON.stringify({ port: (server.address() as any).port, root: root.key, apiId, secret: secrets[0] }))
console.log("ready")
