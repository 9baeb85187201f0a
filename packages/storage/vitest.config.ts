import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // crash/ holds the crash test (run by `test:crash`); its checker's own tests run here.
    include: ['src/**/*.test.ts', 'crash/**/*.test.mjs'],
    // Recovery tests reopen a team hundreds of times; on a loaded 2-core machine that can take
    // longer than vitest's 5 s default. Nothing here sleeps.
    testTimeout: 30_000,
  },
});
