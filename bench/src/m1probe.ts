import { createKeymeter } from "keymeter"
const km = await createKeymeter({ storage: "memory" })
const { apiId } = await km.createApi({ name: "a" })
await km.record([{ apiId, keyId: "k", outcome: "valid", time: Date.now() - 3600_000 }] as any)
for (let i = 0; i < 3; i++) {
  const t = performance.now()
  const a = await km.getVerifications({ apiId, groupBy: "hour", start: Date.now() - 11 * 365 * 86_400_000 } as any)
  const t1 = performance.now()
  const json = JSON.stringify(a)
  console.log(
    a.length,
    "answer ms",
    (t1 - t).toFixed(0),
    "json ms",
    (performance.now() - t1).toFixed(0),
    "MB",
    (json.length / 1e6).toFixed(1)
  )
}
await km.close()
