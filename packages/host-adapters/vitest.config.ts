import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // The suite runs beside builds and other packages' tests on small machines: a generous
    // per-test bound keeps a slow moment from failing a correct test. Nothing here sleeps.
    testTimeout: 30_000,
  },
});
