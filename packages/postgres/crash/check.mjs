// Runs the crash test's checks on a schema a run kept (--keep, or after a failure): every check
// of crash/checks.mjs over the whole team, then, with --final, the end-of-run ones (exactly-once
// and the full-table scans), which hold only once the mailbox was drained.
//
//   node crash/check.mjs --schema <s> [--team-id crash-pg-team-1] [--acks <folder>] [--final]
//                        [--capable 2] [--url <url>]
//
// --acks: the folder a run kept; its `<team id>-acks-*.txt` files are read.
// --capable: the run's --capable (how many slots declared GPU_CAPABILITY; the run's default is
//   half of its workers, rounded up, 2 of the default 3).

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { TeamChecker } from './checks.mjs';
import {
  AGENT_REQUIRES,
  capabilitiesOf,
  DEFAULT_PG_URL,
  defaultCapableSlots,
  parseArgs,
  UsageError,
} from './shared.mjs';

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    schema: { type: 'string' },
    acks: { type: 'string' },
    final: { type: 'boolean' },
    url: { type: 'string' },
    'team-id': { type: 'string' },
    capable: { type: 'string' },
  });
  if (args.schema === undefined) throw new UsageError('--schema is required');
  if (args.capable !== undefined && !/^[1-9]\d*$/.test(args.capable)) {
    throw new UsageError(`--capable must be an integer >= 1, got ${JSON.stringify(args.capable)}`);
  }
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`crash check: ${error.message}`);
  process.exit(2);
}
const pool = new pg.Pool({
  connectionString: String(args.url ?? process.env.TEAMWIRE_PG_URL ?? DEFAULT_PG_URL),
  max: 2,
});
const teamId = String(args['team-id'] ?? 'crash-pg-team-1');
const capableSlots = Number(args.capable ?? defaultCapableSlots(3));
const ackFiles =
  args.acks === undefined
    ? []
    : readdirSync(args.acks)
        .filter((name) => name.startsWith(`${teamId}-acks-`) && name.endsWith('.txt'))
        .map((name) => join(String(args.acks), name));
const checker = new TeamChecker({
  pool,
  schema: String(args.schema),
  teamId,
  ackFiles: () => ackFiles,
  requires: AGENT_REQUIRES,
  capabilitiesOf: (processId) => capabilitiesOf(processId, capableSlots),
});
// Two checks: the second sees the transcripts of members the first learned of from the log.
const violations = [...(await checker.check()), ...(await checker.check())];
if (args.final) violations.push(...(await checker.final()));
await pool.end();
const c = checker.counts;
console.log(
  `${c.records} records, ${c.acknowledged} acknowledged sends, ${c.transcriptRows} transcript rows, ${c.fenceTokens} fence tokens`,
);
if (violations.length === 0) {
  console.log('no violations');
  process.exit(0);
}
for (const violation of violations) console.log(`  - ${violation}`);
process.exit(1);
