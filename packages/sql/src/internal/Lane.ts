/**
 * The event loop's background lane: SQL queries run in slices, and between slices they give way.
 * While nothing else waits, a query runs on at once; while other work waits (verifications,
 * limits, any I/O of the process), and whenever the hot paths have run in the last turns
 * (`Foreground`), all queries together take at most {@link SHARE} of the loop.
 * One lane per process, because the event loop is one per process: two queries share it.
 */
import * as Foreground from "@keymeter/core/Foreground"

/**
 * Part of the event loop that queries take, together, while other work is waiting. A tenth: with a
 * quarter, verifyKey's and limit's p99 beside two clients of heavy queries were 1.6-2.7x those
 * alone, with a tenth 1.2-1.7x (bench/results/sql-hot-path-1m.md); heavy queries take that much
 * longer in wall time under load, their time budget counting their own work only.
 */
export const SHARE = 0.1

/**
 * Other work that ran while a query stepped aside for one turn (ms): at least this, and the loop
 * counts as busy. Below it, the turn found nothing waiting but timers and the turn itself. Steady
 * requests bring less than this a turn (a few tenths of a ms beside 3,000 requests/s), which is
 * why the hot paths also say when they run ({@link quietTurns}); a lower threshold let an idle
 * process's own turns pass for busy now and then, and a dashboard query missed its whole read
 * (G4's first sight at 10M went to 2.9x the route's on memory with 0.1 ms).
 */
const BUSY_MS = 1
/**
 * Turns of the loop that the lane waited for since one in which a hot path ran (`Foreground`:
 * verifyKey, limit): while fewer than {@link FOREGROUND_TURNS}, the loop counts as busy. Beside
 * steady requests a turn brings little other work, yet each request waits for any slice. Counted
 * in turns, not ms: a long slice keeps requests from running, and must not make them look gone.
 */
let quietTurns = Infinity
/** The last run of a hot path the lane saw (`Foreground.lastRan`). */
let seenRun = -Infinity
const FOREGROUND_TURNS = 32
/** A query coming after a pause ({@link STALE_MS}) looks at how long ago a hot path ran instead. */
const FOREGROUND_MS = 50
const busy = () => othersAverage >= BUSY_MS || quietTurns < FOREGROUND_TURNS

/** Ms a step of a query may take while the loop is busy (see {@link stepMs}), and while it is not. */
const BUSY_STEP_MS = 1
const IDLE_STEP_MS = 12
/**
 * Other work per turn, averaged over the last few turns (ms): one turn's blip (V8's own tasks run
 * between turns) does not make the loop busy, a run of them does.
 */
let othersAverage = 0
/** When a query's turn last measured other work (performance.now()). */
let lastTurn = -Infinity
/**
 * Ms after which what the last turns saw says nothing of the loop now: a query coming after a
 * pause looks again (a collection, or a burst of requests, long over, does not make it careful).
 */
const STALE_MS = 50
/** Ms a query waits at a time before it looks whether other work still waits. */
const WAIT_STEP_MS = 2
/**
 * Nothing waits: a turn with less other work than this (ms; a request served takes more), or a
 * step of a wait in which the loop was busy for less than this part of the time (an idle loop
 * sits in the poll for I/O; one serving requests does not).
 */
const IDLE_TURN_MS = 0.1
const IDLE_UTILIZATION = 0.25
/** When the next slice of any query may start (performance.now()); 0: at once. */
let resumeAt = 0
/** Ms all queries' slices have run, so one query's slice is not counted as other work. */
let queriesRan = 0

const now = () => performance.now()
/** Queries waiting for their turn of the loop, woken one per turn (see {@link turn}). */
const waiting: Array<() => void> = []
let waking = false
const wake = () => {
  const next = waiting.shift()!
  // An immediate queued while immediates run waits for the loop's next turn: what arrived
  // meanwhile (requests) is served before the next query's slice.
  if (waiting.length > 0) setImmediate(wake)
  else waking = false
  next()
}
/**
 * The next turn of the loop that no other query takes: one slice a turn, whatever the number of
 * queries (each woken by its own immediate, two ran their slices back to back in one turn).
 */
const turn = () =>
  new Promise<void>((resolve) => {
    waiting.push(resolve)
    if (!waking) {
      waking = true
      setImmediate(wake)
    }
  })
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** One turn of the loop: ms of other work run in it (not queries' slices). */
const otherWork = async (): Promise<number> => {
  const before = now()
  const ranBefore = queriesRan
  await turn()
  const ran = Foreground.lastRan()
  quietTurns = ran === seenRun ? quietTurns + 1 : 0
  seenRun = ran
  lastTurn = now()
  return lastTurn - before - (queriesRan - ranBefore)
}

/** One turn of the loop, its other work added to the average of the last turns'. */
const look = async (): Promise<number> => {
  const others = await otherWork()
  othersAverage = othersAverage * 0.6 + others * 0.4
  return others
}

/**
 * Steps aside after a slice of `ran` ms: one turn of the loop, then, when other work ran in that
 * turn, long enough that the slice was at most {@link SHARE} of the time. Resolves when the query
 * may run its next slice.
 */
export const giveWay = async (ran: number): Promise<void> => {
  queriesRan += ran
  const before = now()
  const owed = ran * (1 - SHARE) / SHARE
  // While the loop is busy, what this slice owes is booked before anything else runs: another
  // query woken meanwhile waits for it instead of running its slice right after this one (two
  // queries took more than their share of the loop). Other work in the turn pays it back.
  const booked = busy()
  if (booked) resumeAt = Math.max(resumeAt, before) + owed
  let others = await look()
  if (booked) resumeAt -= Math.min(owed, others)
  else if (others >= BUSY_MS) resumeAt = Math.max(resumeAt, before) + Math.max(0, owed - others)
  // The debt is owed to other work while it waits: a turn, or a step of the wait, that finds none
  // forgives the rest. Else a blip (a collection, a compile) in the last turns kept queries asleep
  // on an idle loop, three times each slice's length. Not while the hot paths run: between steady
  // requests many turns and waits find none, and queries forgiven took most of the loop (paced
  // verifyKey p99 42-49 ms beside heavy queries, against 10-13 ms kept to their share).
  while (resumeAt > now()) {
    if (quietTurns < FOREGROUND_TURNS) {
      await sleep(Math.min(resumeAt - now(), WAIT_STEP_MS))
      others = await look()
      continue
    }
    if (others < IDLE_TURN_MS) {
      resumeAt = 0
      break
    }
    const waiting = performance.eventLoopUtilization()
    await sleep(Math.min(resumeAt - now(), WAIT_STEP_MS))
    if (performance.eventLoopUtilization(waiting).utilization < IDLE_UTILIZATION) {
      resumeAt = 0
      break
    }
    others = await look()
  }
}

/**
 * Whether nothing else has been waiting lately: a query may then take a step of
 * {@link IDLE_STEP_MS}, or more where a store's read is cheap whatever its range. When the lane's
 * last turn is stale, one turn of the loop tells.
 */
export const isFree = async (): Promise<boolean> => {
  if (now() - lastTurn > STALE_MS) {
    quietTurns = Foreground.idleFor() < FOREGROUND_MS ? 0 : Infinity
    othersAverage = await otherWork()
  }
  return !busy()
}

/**
 * How long a step a query cannot pause within (a store's read of counts) should take: short while
 * other work has been waiting lately, longer while the loop is free (fewer, larger steps cost less
 * in all).
 */
export const stepMs = (): number => busy() ? BUSY_STEP_MS : IDLE_STEP_MS
