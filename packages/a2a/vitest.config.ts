import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // End-to-end tests start team processes and connect the A2A SDK's client and server to them.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
