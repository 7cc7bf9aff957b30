import process from "node:process"

// Loaded with `--import` into a server under test: each SIGUSR2 moves its clock a day ahead, so
// a test can see what a day's passing does (a daily refill of credits, say) through a real client.
const realNow = Date.now
let offset = 0
Date.now = () => realNow() + offset
process.on("SIGUSR2", () => {
  offset += 86_400_000
  process.stdout.write(`time travelled: +${offset / 86_400_000} day(s)\n`)
})
