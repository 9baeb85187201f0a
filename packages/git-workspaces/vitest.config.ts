import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Every test drives the real git binary in temporary repositories; on a loaded 2-core
    // machine a worktree checkout can take longer than vitest's 5 s default. Nothing here sleeps
    // on a clock except the crash test's kill delays.
    testTimeout: 60_000,
  },
});
