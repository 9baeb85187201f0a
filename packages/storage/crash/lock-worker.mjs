// One opener of the lock race test (lock-race.mjs). On {type: 'open', dir, teamId} it opens the
// team folder with the real process probe; when it becomes the owner it appends one record
// (acknowledged once `append` resolved) and holds the folder until {type: 'close'}.
//
// With --hold <dir> --team-id <id> it instead opens the folder at once, appends one record,
// prints `held <pid>` on stdout and waits to be killed.

import { parseArgs } from 'node:util';
import { conformanceRecords } from '@teamwire/core/testing';
import { openJsonlTeamStore } from '../dist/index.js';

const { values } = parseArgs({
  options: { hold: { type: 'string' }, 'team-id': { type: 'string' } },
});

async function openAndAppend(dir, teamId) {
  const store = await openJsonlTeamStore({ teamId, dir, durability: 'fsync' });
  const seq = store.log.lastSeq() + 1;
  const [record] = conformanceRecords(teamId, seq, 1);
  await store.log.append({ records: [record] });
  return { store, seq };
}

if (values.hold !== undefined) {
  await openAndAppend(values.hold, values['team-id']);
  process.stdout.write(`held ${process.pid}\n`);
  setInterval(() => {}, 60_000);
} else {
  let held;
  process.on('message', async (message) => {
    if (message.type === 'open') {
      try {
        held = await openAndAppend(message.dir, message.teamId);
        process.send({ type: 'opened', owner: true, seq: held.seq });
      } catch (error) {
        process.send({ type: 'opened', owner: false, code: error.code, message: error.message });
      }
    } else if (message.type === 'close') {
      await held?.store.close();
      held = undefined;
      process.send({ type: 'closed' });
    } else if (message.type === 'exit') {
      process.exit(0);
    }
  });
  process.send({ type: 'ready' });
}
