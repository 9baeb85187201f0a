import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { startTeamEdge } from './index.js';
import { openTestTeam } from './test-team.js';

/*
 * The dashboard's browser flow through the real edge (Debian's Chromium, driven by
 * playwright-core): the page opened from the printed URL loads with its token, goes live on the
 * event stream, and takes a message to the lead, while MCP shares the port. Without Chromium the
 * suite is skipped with a message, except under CI=true, where it fails.
 */

const CHROMIUM = process.env.TEAMWIRE_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  const message = `no Chromium at ${CHROMIUM} (apt-get install chromium, or set TEAMWIRE_CHROMIUM)`;
  if (process.env.CI === 'true') throw new Error(`${message}: CI runs the browser tests`);
  console.warn(`${message}; skipping the edge's browser test`);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(!hasChromium)('the dashboard through the edge, in a browser', () => {
  it('opens from the printed URL, goes live, and sends a message from the page', async () => {
    const fixture = await openTestTeam();
    cleanups.push(() => fixture.close());
    // the page as built by @teamwire/dashboard (its default assets)
    const edge = await startTeamEdge({
      team: fixture.team,
      log: fixture.log,
      hub: fixture.hub,
      mcp: { tokens: fixture.tokens },
    });
    cleanups.push(() => edge.close());
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    cleanups.push(() => browser.close());
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
    });

    expect((await page.goto(edge.origin))?.status()).toBe(401);
    refused.length = 0;
    await page.goto(edge.url);
    await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
    await page.locator('[data-testid="member"][data-name="alice"]').waitFor();
    await page.locator('[data-testid="message-to"]').selectOption('lead');
    await page.locator('[data-testid="message-text"]').fill('A note through the edge.');
    await page.locator('[data-testid="message-send"]').click();
    await page
      .locator('[data-testid="mail"][data-from="operator"][data-to="lead"]', {
        hasText: 'A note through the edge.',
      })
      .waitFor();
    // the page, its assets, the snapshot, the stream and the action all passed the policy
    expect(refused).toEqual([]);
  });
});
