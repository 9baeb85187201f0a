import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each test starts the example as a child process (node with the tsx loader), on a machine
    // that may be running builds and other packages' tests beside it. Nothing here sleeps.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
