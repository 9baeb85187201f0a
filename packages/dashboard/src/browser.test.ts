import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createAgentRegistry,
  createEventHub,
  defineTool,
  type EventHub,
  foldTeam,
  openTeam,
  type TeamLog,
  type TeamRecord,
  type TeamService,
} from '@teamwire/core';
import {
  type AgentScript,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { MAIL_TEXT_KEEP, OPERATOR_AGENT } from './index.js';
import { chattyLog, isLegalMessage, serveRoutes, type TestServer } from './test-helpers.js';

/*
 * The page in a real browser (Debian's Chromium, driven by playwright-core) against a scripted
 * team served by this package's handler. Without Chromium the suite is skipped with a message,
 * except under CI=true, where it fails.
 */

const CHROMIUM = process.env.TEAMWIRE_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  const message = `no Chromium at ${CHROMIUM} (apt-get install chromium, or set TEAMWIRE_CHROMIUM)`;
  if (process.env.CI === 'true') throw new Error(`${message}: CI runs the browser tests`);
  console.warn(`${message}; skipping the dashboard browser tests`);
}
const ASSETS = fileURLToPath(new URL('../dist/ui', import.meta.url));
const SCREENSHOT = fileURLToPath(new URL('../media/dashboard.png', import.meta.url));

function gate(): { promise: Promise<void>; open(): void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A team on the scripted model whose worker waits for the test between its steps. */
function scripts(gates: {
  claim: ReturnType<typeof gate>;
  finish: ReturnType<typeof gate>;
}): Record<string, AgentScript> {
  return {
    lead: ({ call, request }) => {
      if (call === 1) {
        return {
          toolCalls: [
            { name: 'task_create', input: { subject: 'Parse the input', description: 'Parse.' } },
            {
              name: 'task_create',
              input: { subject: 'Print the output', description: 'Print.', blockedBy: ['task-1'] },
            },
            {
              name: 'spawn_teammate',
              input: { name: 'ann', description: 'Works the board', prompt: 'Take task-1.' },
            },
          ],
        };
      }
      const last = JSON.stringify(request.messages.at(-1)?.content ?? '');
      if (last.includes('from the page')) {
        return {
          toolCalls: [
            {
              name: 'send_message',
              input: { to: 'operator', message: 'Lead here: got your note from the page.' },
            },
          ],
        };
      }
      return { text: 'Noted.' };
    },
    ann: async ({ call }) => {
      if (call === 1) {
        await gates.claim.promise;
        return {
          text: 'Claiming task-1. ',
          toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'claim' } }],
          usage: { inputTokens: 1200, outputTokens: 40 },
        };
      }
      if (call === 2) {
        await gates.finish.promise;
        return {
          toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'complete' } }],
          usage: { inputTokens: 1300, outputTokens: 30 },
        };
      }
      return { text: 'task-1 is done.', usage: { inputTokens: 1400, outputTokens: 20 } };
    },
  };
}

interface Running {
  team: TeamService;
  hub: EventHub;
  log: TeamLog;
  server: TestServer;
  close(): Promise<void>;
}

async function start(
  dir: string,
  options: { port?: number; token?: string; gates: Parameters<typeof scripts>[0] },
): Promise<Running> {
  const store = await openJsonlTeamStore({ teamId: 'web-1', dir, durability: 'buffered' });
  const model = createScriptedModel({ scripts: scripts(options.gates) });
  const hub = createEventHub({ teamId: 'web-1', log: store.log });
  const team = await openTeam({
    teamId: 'web-1',
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'Lead.', model },
      { type: 'worker', systemPrompt: 'Work.', model },
      OPERATOR_AGENT,
    ]),
    lead: { agentType: 'lead' },
    events: hub,
    idleClaim: false,
  });
  const server = await serveRoutes({
    log: store.log,
    hub,
    team,
    assetsDir: ASSETS,
    port: options.port,
    token: options.token,
  });
  const running: Running = {
    team,
    hub,
    log: store.log,
    server,
    async close() {
      await running.server.close();
      await team.dispose();
      hub.close();
      await store.close();
    },
  };
  return running;
}

const attr = (page: Page, selector: string, name: string) =>
  page.locator(selector).first().getAttribute(name);

/** Core's fold of everything `log` holds now: what the page must agree with. */
async function foldLog(log: TeamLog, teamId: string): Promise<ReturnType<typeof foldTeam>> {
  const records: TeamRecord[] = [];
  for await (const record of log.read()) records.push(record);
  return foldTeam(records, { teamId });
}

/**
 * A new page that records every Content-Security-Policy violation of every document it loads:
 * the browser's own report (`securitypolicyviolation`) and its console line.
 */
async function watchedPage(browser: Browser): Promise<{ page: Page; violations: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const violations: string[] = [];
  await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
  // a string, not a function: this file is compiled without the DOM's types
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (event) => {
    window.reportViolation(event.effectiveDirective + ' refused ' + event.blockedURI);
  });`);
  page.on('console', (message) => {
    if (/content.security.policy/i.test(message.text())) violations.push(message.text());
  });
  return { page, violations };
}

describe.skipIf(!hasChromium)('the dashboard in a browser', () => {
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'teamwire-dashboard-'));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows a team live, takes a message to the lead, and catches up after a server restart', async () => {
    const gates = { claim: gate(), finish: gate() };
    let run = await start(dir, { gates });
    const { page, violations } = await watchedPage(browser);
    try {
      // no token: refused, before anything is shown
      const refused = await page.goto(run.server.url.replace(/\?token=.*/, ''));
      expect(refused?.status()).toBe(401);

      await page.goto(run.server.url);
      await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
      const prompting = run.team.promptLead('Plan the work.');

      // a member joins, tasks appear on the graph
      await page.locator('[data-testid="member"][data-name="ann"]').waitFor();
      await page.locator('[data-testid="task"][data-task-id="task-2"]').waitFor();
      expect(await attr(page, '[data-testid="task"][data-task-id="task-1"]', 'data-status')).toBe(
        'pending',
      );
      // the task moves: claimed by ann, then completed
      gates.claim.open();
      await page
        .locator(
          '[data-testid="task"][data-task-id="task-1"][data-status="in_progress"][data-owner="ann"]',
        )
        .waitFor();
      await page
        .locator('[data-testid="member"][data-name="ann"] [data-testid="member-output"]', {
          hasText: 'Claiming task-1.',
        })
        .waitFor();
      gates.finish.open();
      await page
        .locator('[data-testid="task"][data-task-id="task-1"][data-status="completed"]')
        .waitFor();
      await prompting;
      await run.team.idle();
      await page.locator('[data-testid="tokens"][data-name="ann"]', { hasText: '3900' }).waitFor();

      // a message typed on the page reaches the lead, and its reply shows up
      await page.locator('[data-testid="message-to"]').selectOption('lead');
      await page.locator('[data-testid="message-text"]').fill('A note from the page.');
      await page.locator('[data-testid="message-send"]').click();
      await page
        .locator('[data-testid="mail"][data-from="operator"][data-to="lead"]', {
          hasText: 'A note from the page.',
        })
        .waitFor();
      await page
        .locator('[data-testid="mail"][data-from="lead"][data-to="operator"]', {
          hasText: 'got your note',
        })
        .waitFor();
      await page.locator('[data-testid="mail-filter-kind"]').selectOption('idle_notification');
      expect(await page.locator('[data-testid="mail"]').count()).toBeGreaterThan(0);
      expect(
        await page.locator('[data-testid="mail"]:not([data-kind="idle_notification"])').count(),
      ).toBe(0);
      await page.locator('[data-testid="mail-filter-kind"]').selectOption('');

      // `TEAMWIRE_UPDATE_SCREENSHOT=1` refreshes the README's screenshot
      const update = process.env.TEAMWIRE_UPDATE_SCREENSHOT === '1';
      if (update) await mkdir(join(SCREENSHOT, '..'), { recursive: true });
      const shot = update ? SCREENSHOT : join(dir, 'dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(existsSync(shot)).toBe(true);

      // steering from the page: a task, then a shutdown
      await page.locator('[data-testid="task-subject"]').fill('Review the printer');
      await page.locator('[data-testid="task-description"]').fill('Read it through.');
      await page.locator('[data-testid="task-create"]').click();
      await page.locator('[data-testid="task"][data-task-id="task-3"]').waitFor();
      expect(run.team.getTask(run.team.lead, { taskId: 'task-3' }).subject).toBe(
        'Review the printer',
      );
      // a quiet message waits for ann's next turn, which never comes: it ends as a dead letter
      const later = await run.team.sendMessage(run.team.lead, {
        to: 'ann',
        text: 'For your next turn.',
        delivery: 'quiet',
      });
      await page
        .locator('[data-testid="member"][data-name="ann"] [data-testid="shutdown"]')
        .click();
      await page
        .locator('[data-testid="member"][data-name="ann"][data-status="retired"]')
        .waitFor();
      await page
        .locator('[data-testid="mail"][data-kind="shutdown_request"][data-to="ann"]')
        .waitFor();
      expect(await page.locator('[data-testid="action-error"]').textContent()).toBe('');
      const deadMail = page.locator('[data-testid="mail"][data-delivery="dead-letter"]', {
        hasText: 'For your next turn.',
      });
      await deadMail.waitFor();
      await run.team.idle();
      const folded = await foldLog(run.log, 'web-1');
      const letter = folded.deadLetters.find((d) => d.message.id === later.messageId);
      const annId = folded.roster.find((m) => m.name === 'ann')?.id;
      expect(letter?.reason).toBe('TARGET_RETIRED');
      const mark = deadMail.locator('[data-testid="dead-letter"]');
      expect(await mark.getAttribute('data-reason')).toBe(letter?.reason);
      expect(await mark.textContent()).toContain(letter?.detail);
      const annDead = folded.deadLetters.filter((d) => d.message.targetId === annId).length;
      await page
        .locator(
          `[data-testid="member"][data-name="ann"] [data-testid="member-dead-letters"][data-count="${annDead}"]`,
        )
        .waitFor();
      // the team's dead letters, as a list of their own
      await page.locator('[data-testid="mail-filter-delivery"]').selectOption('dead-letter');
      expect(await page.locator('[data-testid="mail"]').count()).toBe(folded.deadLetters.length);
      expect(
        await page.locator('[data-testid="mail"]:not([data-delivery="dead-letter"])').count(),
      ).toBe(0);
      await page.locator('[data-testid="mail-filter-delivery"]').selectOption('');

      // only the HTTP server goes away (the team and its hub stay): the page reconnects with
      // Last-Event-ID and gets what happened meanwhile, with no reload
      await run.server.close();
      await page.locator('[data-testid="connection"]', { hasText: 'reconnecting' }).waitFor();
      await run.team.createTask(run.team.lead, { subject: 'While away', description: 'x' });
      run.server = await serveRoutes({
        log: run.log,
        hub: run.hub,
        team: run.team,
        assetsDir: ASSETS,
        port: run.server.port,
        token: run.server.token,
      });
      await page.locator('[data-testid="task"][data-task-id="task-4"]').waitFor();
      await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
      expect(await page.locator('[data-testid="reloads"]').textContent()).toBe('0');

      // the server stops and comes back with a new hub: the page notices, and reloads its state
      const { port, token } = run.server;
      await run.close();
      await page.locator('[data-testid="connection"]', { hasText: 'reconnecting' }).waitFor();
      run = await start(dir, { port, token, gates });
      await page.locator('[data-testid="reloads"]', { hasText: '1' }).waitFor();
      await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
      await run.team.createTask(run.team.lead, { subject: 'After the restart', description: 'x' });
      await page.locator('[data-testid="task"][data-task-id="task-5"]').waitFor();
      expect(await attr(page, '[data-testid="task"][data-task-id="task-1"]', 'data-status')).toBe(
        'completed',
      );
      // the reloaded snapshot still holds the dead letter, marked
      expect(
        await deadMail.locator('[data-testid="dead-letter"]').getAttribute('data-reason'),
      ).toBe('TARGET_RETIRED');
      // the page did all of that under its Content-Security-Policy
      expect(violations).toEqual([]);
    } finally {
      await page.close();
      await run.close();
    }
  });

  it('loads a team of 10,000 legal 60 KiB messages, shows each body cut, and shows one whole on demand', async () => {
    const filler = 'Every word of a long report. '.repeat(2200).slice(0, 60 * 1024);
    const text = (seq: number) => `report ${seq}: ${filler}`;
    expect(isLegalMessage(text(10_002))).toBe(true);
    const hub = createEventHub({ teamId: 'big' });
    const server = await serveRoutes({
      log: chattyLog({ teamId: 'big', messages: 10_000, text }),
      hub,
      assetsDir: ASSETS,
    });
    const { page, violations } = await watchedPage(browser);
    try {
      await page.goto(server.url);
      await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
      const last = page.locator('[data-testid="mail"]').last();
      await last.locator('[data-testid="cut-mark"]').waitFor();
      expect(await last.locator('[data-testid="cut-mark"]').getAttribute('data-more')).toBe(
        String(text(10_002).length - MAIL_TEXT_KEEP),
      );
      expect(await last.locator('.mail-text').textContent()).toContain(
        text(10_002).slice(0, MAIL_TEXT_KEEP),
      );
      await last.locator('[data-testid="mail-expand"]').click();
      const whole = last.locator('[data-testid="mail-text-whole"]');
      await whole.waitFor();
      expect(await whole.textContent()).toBe(text(10_002));
      expect(await last.locator('[data-testid="cut-mark"]').count()).toBe(0);
      expect(violations).toEqual([]);
      // the policy is in force (and this test sees its reports): an injected inline script is
      // refused
      await page.evaluate(`document.body.append(Object.assign(document.createElement('script'), {
        textContent: 'window.injected = true',
      }))`);
      await vi.waitUntil(() => violations.length > 0, { timeout: 5000 });
      expect(await page.evaluate('window.injected === true')).toBe(false);
      expect(violations[0]).toMatch(/script-src/);
    } finally {
      await page.close();
      await server.close();
      hub.close();
    }
  });

  it('lists pending approvals with their input, and runs the call once the page approves it', async () => {
    const runs: string[] = [];
    const commit = defineTool({
      name: 'commit',
      description: 'Commits the work.',
      inputSchema: z.object({ message: z.string(), files: z.array(z.string()) }),
      needsApproval: true,
      async execute({ message }) {
        runs.push(message);
        return `committed: ${message}`;
      },
    });
    const committing: AgentScript = ({ call, agentName }) =>
      call === 1
        ? {
            toolCalls: [
              {
                name: 'commit',
                input: { message: `${agentName}: fix the parser`, files: ['src/parse.ts'] },
                id: `commit-${agentName}`,
              },
            ],
          }
        : { text: `done ${call}` };
    const model = createScriptedModel({
      scripts: { lead: () => ({ text: 'Noted.' }), bob: committing, cat: committing },
    });
    const log = createMemoryTeamLog({ teamId: 'web-2' });
    const hub = createEventHub({ teamId: 'web-2', log });
    const team = await openTeam({
      teamId: 'web-2',
      log,
      transcripts: createMemoryTranscriptStore(),
      format: xmlFormat,
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'Lead.', model },
        {
          type: 'worker',
          systemPrompt: 'Work.',
          model,
          tools: [commit],
          approval: { approver: 'operator', expiresInMs: 3_600_000 },
        },
        { type: 'careful', systemPrompt: 'Work carefully.', model, tools: [commit] },
        OPERATOR_AGENT,
      ]),
      lead: { agentType: 'lead' },
      events: hub,
      idleClaim: false,
    });
    const server = await serveRoutes({ log, hub, team, assetsDir: ASSETS });
    const { page, violations } = await watchedPage(browser);
    try {
      // the person is on the team (as the page's first action would make it) before bob asks
      await team.spawnTeammate(team.lead, {
        name: 'operator',
        description: 'The person at the dashboard',
        prompt: 'You steer the team from the dashboard.',
        agentType: OPERATOR_AGENT.type,
      });
      await page.goto(server.url);
      await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
      for (const [name, agentType] of [
        ['bob', 'worker'],
        ['cat', 'careful'],
      ] as const) {
        await team.spawnTeammate(team.lead, {
          name,
          description: 'commits',
          prompt: 'Commit.',
          agentType,
        });
      }
      await team.idle();
      const pending = team.approvals({ status: 'pending' });
      const bobs = pending.find((a) => a.requester === 'bob');
      const cats = pending.find((a) => a.requester === 'cat');
      expect([bobs?.approver, cats?.approver]).toEqual(['operator', 'lead']);

      // each shows live with its tool and its input, pretty-printed
      const bobCard = page.locator(`[data-testid="approval"][data-approval-id="${bobs?.id}"]`);
      await bobCard.waitFor();
      expect(await bobCard.getAttribute('data-approver')).toBe('operator');
      expect(await bobCard.locator('[data-testid="approval-what"]').textContent()).toBe('commit');
      expect(await bobCard.locator('[data-testid="approval-input"]').textContent()).toBe(
        JSON.stringify(JSON.parse(bobs?.input as string), null, 2),
      );
      expect(await bobCard.locator('[data-testid="approval-expiry"]').textContent()).toMatch(
        /expires in (59m|1h)/,
      );
      await page.locator('[data-testid="approvals-pending"][data-count="2"]').waitFor();
      expect(runs).toEqual([]);

      // Approve: the call runs, once
      await bobCard.locator('[data-testid="approve"]').click();
      await page
        .locator(
          `[data-testid="approval-decided"][data-approval-id="${bobs?.id}"][data-status="approved"][data-decider="operator"]`,
        )
        .waitFor();
      await vi.waitUntil(() => runs.length > 0, { timeout: 5000 });
      await team.idle();
      expect(runs).toEqual(['bob: fix the parser']);
      expect(team.approvals().find((a) => a.id === bobs?.id)).toMatchObject({
        status: 'approved',
        decider: 'operator',
        started: true,
      });

      // Reject asks for a reason; the lead's approval is decided as the host
      const catCard = page.locator(`[data-testid="approval"][data-approval-id="${cats?.id}"]`);
      await catCard.locator('[data-testid="reject"]').click();
      await catCard.locator('[data-testid="reject-reason"]').fill('Not before the release.');
      await catCard.locator('[data-testid="reject-confirm"]').click();
      const rejected = page.locator(
        `[data-testid="approval-decided"][data-approval-id="${cats?.id}"][data-status="rejected"][data-decider="host"]`,
      );
      await rejected.waitFor();
      expect(await rejected.textContent()).toContain('Not before the release.');
      await page.locator('[data-testid="approvals-pending"][data-count="0"]').waitFor();
      await team.idle();
      expect(runs).toEqual(['bob: fix the parser']);
      expect(team.approvals().find((a) => a.id === cats?.id)).toMatchObject({
        status: 'rejected',
        reason: 'Not before the release.',
      });

      // the requests are mail of their own kind on the timeline
      await page.locator('[data-testid="mail-filter-kind"]').selectOption('approval_request');
      await page
        .locator(
          '[data-testid="mail"][data-kind="approval_request"][data-from="bob"][data-to="operator"]',
        )
        .waitFor();
      expect(
        await page.locator('[data-testid="mail"]:not([data-kind="approval_request"])').count(),
      ).toBe(0);
      expect(violations).toEqual([]);
    } finally {
      await page.close();
      await server.close();
      await team.dispose();
      hub.close();
    }
  });
});
