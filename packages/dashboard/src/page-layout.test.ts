import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createEventHub } from '@teamwire/core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardTask, boardLog, serveRoutes } from './test-helpers.js';

/*
 * How the page lays out a real team's board and figures, in Debian's Chromium at a laptop's
 * viewport: many tasks stay readable, and the token table stays in its card. Skipped without
 * Chromium, except under CI=true (as browser.test.ts).
 */

const CHROMIUM = process.env.TEAMWIRE_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI === 'true') {
  throw new Error(`no Chromium at ${CHROMIUM}: CI runs the browser tests`);
}
const ASSETS = fileURLToPath(new URL('../dist/ui', import.meta.url));
const VIEWPORT = { width: 1280, height: 800 };

/** `independent` tasks linked to nothing, then two chains and a task that waits for both. */
function board(independent: number): { tasks: BoardTask[]; edges: number } {
  const tasks: BoardTask[] = [];
  for (let n = 1; n <= independent; n++) {
    tasks.push({ n, subject: `Review packages/area-${n} for defects` });
  }
  const a = independent + 1;
  tasks.push(
    { n: a, subject: 'Design the schema' },
    { n: a + 1, subject: 'Migrate the schema', blockedBy: [a] },
    { n: a + 2, subject: 'Backfill the rows', blockedBy: [a + 1] },
    { n: a + 3, subject: 'Write the client' },
    { n: a + 4, subject: 'Test the client', blockedBy: [a + 3] },
    { n: a + 5, subject: 'Write the report', blockedBy: [a + 2, a + 4] },
  );
  return { tasks, edges: 5 };
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

async function boxes(page: Page, selector: string): Promise<(Box & { id: string | null })[]> {
  const all = page.locator(selector);
  const out: (Box & { id: string | null })[] = [];
  for (let i = 0; i < (await all.count()); i++) {
    const box = await all.nth(i).boundingBox();
    if (box === null) throw new Error(`${selector} #${i} is not rendered`);
    out.push({ ...box, id: await all.nth(i).getAttribute('data-task-id') });
  }
  return out;
}

describe.skipIf(!hasChromium)('the page laid out for a real team', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const independent of [12, 30]) {
    it(`draws ${independent} independent tasks and a few chains readable, none over another`, async () => {
      const { tasks, edges } = board(independent);
      const hub = createEventHub({ teamId: 'board' });
      const server = await serveRoutes({
        log: boardLog({ teamId: 'board', names: ['ann', 'bob'], tasks }),
        hub,
        assetsDir: ASSETS,
      });
      const page = await browser.newPage({ viewport: VIEWPORT });
      try {
        await page.goto(server.url);
        await page.locator('[data-testid="task-graph"][data-fitted="true"]').waitFor();
        const nodes = await boxes(page, '[data-testid="task"]');
        expect(nodes.map((n) => n.id).sort()).toEqual(tasks.map((t) => `task-${t.n}`).sort());
        for (const node of nodes) {
          // a node keeps a readable size: its id, status, subject and owner on their lines
          expect(node.width, `${node.id} width`).toBeGreaterThanOrEqual(150);
          expect(node.height, `${node.id} height`).toBeGreaterThanOrEqual(50);
        }
        for (const [i, a] of nodes.entries()) {
          for (const b of nodes.slice(i + 1)) {
            expect(overlap(a, b), `${a.id} over ${b.id}`).toBe(false);
          }
        }
        // the subjects' text is drawn at a legible size
        const subjects = await boxes(page, '[data-testid="task"] .task-subject');
        expect(Math.min(...subjects.map((s) => s.height))).toBeGreaterThanOrEqual(11);
        // every blocker is still drawn, as an edge
        expect(await page.locator('.react-flow__edge').count()).toBe(edges);
        // and the whole graph is in its box: nothing is cut off at its sides
        const graph = (await page.locator('[data-testid="task-graph"]').boundingBox()) as Box;
        for (const node of nodes) {
          expect(node.x).toBeGreaterThanOrEqual(graph.x);
          expect(node.x + node.width).toBeLessThanOrEqual(graph.x + graph.width);
        }
      } finally {
        await page.close();
        await server.close();
        hub.close();
      }
    });
  }

  it('keeps the token table inside its card with long names and large figures', async () => {
    const names = [
      'securityreviewer-packagesdashboardsrc',
      'architecturereviewer-packagescoreruntime',
      'docs-writer',
    ];
    const hub = createEventHub({ teamId: 'tokens' });
    const server = await serveRoutes({
      log: boardLog({ teamId: 'tokens', names, tasks: [{ n: 1, subject: 'Review' }] }),
      hub,
      assetsDir: ASSETS,
    });
    for (const [i, name] of ['lead', ...names].entries()) {
      hub.publish(name, {
        type: 'model.step',
        step: 1,
        usage: { inputTokens: 98_765_432 + i, outputTokens: 1_234_567 + i },
      });
      hub.publish(name, {
        type: 'context.compacted',
        compactionId: `c-${i}`,
        reason: 'budget',
        tokensBefore: 187_654 + i,
        tokensAfter: 23_456,
        estimated: false,
        replacedMessages: 40,
        retainedMessages: 2,
        durationMs: 1200,
        policy: 'summary',
      });
    }
    const page = await browser.newPage({ viewport: VIEWPORT });
    try {
      await page.goto(server.url);
      const row = page.locator('[data-testid="tokens"]').last();
      await row.locator('[data-testid="tokens-input"][data-value="98765435"]').waitFor();
      const table = (await page.locator('[data-testid="tokens-table"]').boundingBox()) as Box;
      const card = (await page.locator('[data-testid="tokens-card"]').boundingBox()) as Box;
      expect(table.width).toBeGreaterThan(0);
      expect(table.x).toBeGreaterThanOrEqual(card.x);
      expect(table.x + table.width).toBeLessThanOrEqual(card.x + card.width);
      // no cell spills out of the table either
      for (const cell of await boxes(
        page,
        '[data-testid="tokens-table"] th, [data-testid="tokens-table"] td',
      )) {
        expect(cell.x + cell.width).toBeLessThanOrEqual(card.x + card.width);
      }
      const scroll = await page
        .locator('[data-testid="tokens-card"]')
        .evaluate((el) => [el.scrollWidth, el.clientWidth]);
      expect(scroll[0]).toBeLessThanOrEqual(scroll[1] as number);
    } finally {
      await page.close();
      await server.close();
      hub.close();
    }
  });
});
