/**
 * Ports for servers that tests and benchmarks start.
 */
import { createServer } from "node:net"

/** A free TCP port on 127.0.0.1 (free when asked: bind it soon). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })
