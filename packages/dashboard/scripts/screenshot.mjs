#!/usr/bin/env node
// The README's picture of a 12-task review: a lead, four reviewers, twelve review tasks and the
// report that waits for them, served read-only by the built package and taken in headless
// Chromium. Run `pnpm --filter @teamwire/dashboard build` first, then
// `node packages/dashboard/scripts/screenshot.mjs [out.png]` (Chromium: /usr/bin/chromium, or
// TEAMWIRE_CHROMIUM).
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createAdaptorServer } from '@hono/node-server';
import { createEventHub } from '@teamwire/core';
import { chromium } from 'playwright-core';
import { createDashboardRoutes } from '../dist/index.js';

const out =
  process.argv[2] ?? fileURLToPath(new URL('../media/dashboard-12-tasks.png', import.meta.url));
const teamId = 'review-0412';
const start = Date.UTC(2026, 3, 12, 9, 30);
const reviewers = ['rev-core', 'rev-storage', 'rev-web', 'rev-docs'];
const folders = [
  'packages/core/src/runtime',
  'packages/core/src/hub',
  'packages/core/src/state',
  'packages/storage/src/jsonl',
  'packages/postgres/src',
  'packages/protocol/src',
  'packages/dashboard/src',
  'packages/dashboard/ui',
  'packages/mcp/src',
  'apps/example/src',
  'docs',
  'scripts',
];
/** reviewer, status of each review task */
const progress = folders.map((_, i) => ({
  owner: reviewers[i % reviewers.length],
  status: i < 5 ? 'completed' : i < 9 ? (i % 4 === 0 ? 'pending' : 'in_progress') : 'pending',
}));

const records = [];
const at = () => start + records.length * 7_000;
const push = (record) =>
  records.push({ seq: records.length + 1, at: at(), teamId, schemaVersion: 1, ...record });
const idOf = (name) => (name === 'lead' ? teamId : `${name}-01J0`);
const member = (name, description) =>
  push({
    type: 'member',
    member: {
      id: idOf(name),
      name,
      description,
      agentType: name === 'lead' ? 'lead' : 'reviewer',
      provider: 'anthropic',
      context: 'fresh',
      phase: 'active',
    },
  });
const task = (n, subject, fields = {}) =>
  push({
    type: 'task',
    task: {
      id: `task-${n}`,
      revision: 1,
      subject,
      description: `${subject}.`,
      status: 'pending',
      creatorId: teamId,
      blockedBy: [],
      writeScopes: [],
      ...fields,
    },
  });
let mailId = 0;
const mail = (from, to, text, kind = 'message') => {
  const id = `m-${++mailId}`;
  push({
    type: 'message.queued',
    message: {
      id,
      senderId: idOf(from),
      senderName: from,
      targetId: idOf(to),
      kind,
      delivery: 'wakeup',
      content: [{ type: 'text', text }],
    },
  });
  push({ type: 'message.delivered', messageId: id, targetId: idOf(to) });
};

member('lead', 'Plans the review and writes the report');
for (const [i, folder] of folders.entries()) task(i + 1, `Review ${folder}`);
task(13, 'Write the review report', { blockedBy: folders.map((_, i) => `task-${i + 1}`) });
for (const name of reviewers) {
  member(name, `Reviews ${name.slice(4)} code for defects`);
  mail(
    'lead',
    name,
    `Take the review tasks of ${name.slice(4)}; report each finding with its file and line.`,
  );
}
progress.forEach(({ owner, status }, i) => {
  if (status === 'pending') return;
  task(i + 1, `Review ${folders[i]}`, { status: 'in_progress', ownerId: idOf(owner), revision: 2 });
});
progress.forEach(({ owner, status }, i) => {
  if (status !== 'completed') return;
  task(i + 1, `Review ${folders[i]}`, { status, ownerId: idOf(owner), revision: 3 });
  mail(
    owner,
    'lead',
    `${folders[i]}: done, 2 findings (one off-by-one in a bound, one missing test).`,
  );
});
mail('rev-docs', 'lead', 'Idle: waiting for the next review task.', 'idle_notification');

const log = {
  lastSeq: () => records.length,
  async *read(options) {
    for (const record of records.slice((options?.fromSeq ?? 1) - 1)) yield record;
  },
};
const hub = createEventHub({ teamId });
const usage = {
  lead: [41_200, 3_900],
  'rev-core': [186_400, 12_800],
  'rev-storage': [152_900, 9_700],
  'rev-web': [98_300, 7_100],
  'rev-docs': [61_800, 4_200],
};
for (const [name, [input, output]] of Object.entries(usage)) {
  hub.publish(name, { type: 'turn.start', reason: 'message' });
  hub.publish(name, {
    type: 'model.step',
    step: 1,
    usage: { inputTokens: input, outputTokens: output },
  });
}
hub.publish('rev-core', {
  type: 'model.text-delta',
  text: 'Reading runner.ts: the retry bound is checked after the increment.',
});
hub.publish('rev-core', {
  type: 'tool.call',
  toolCall: { id: 'c1', name: 'read_file', input: {} },
});
hub.publish('rev-web', {
  type: 'model.text-delta',
  text: 'The snapshot cut keeps surrogate pairs whole.',
});

// The routes on loopback for this picture, behind the one check the page needs: its token.
// `@teamwire/edge` serves them for real, with its whole policy.
const token = randomBytes(24).toString('base64url');
const routes = createDashboardRoutes({ log, hub });
const http = createAdaptorServer({
  fetch: (request) => {
    const url = new URL(request.url);
    const presented =
      /^bearer +(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] ??
      request.headers.get('x-teamwire-token') ??
      url.searchParams.get('token');
    if (!url.pathname.startsWith('/assets/') && presented !== token) {
      return new Response('unauthorized', { status: 401 });
    }
    return routes.fetch(request);
  },
});
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
const server = {
  url: `http://127.0.0.1:${http.address().port}/?token=${token}`,
  async close() {
    routes.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  },
};
const browser = await chromium.launch({
  executablePath: process.env.TEAMWIRE_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(server.url);
  await page.locator('[data-testid="task-graph"][data-fitted="true"]').waitFor();
  await page.locator('[data-testid="member-output"]', { hasText: 'retry bound' }).waitFor();
  await page.screenshot({ path: out, fullPage: true });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await server.close();
  hub.close();
}
