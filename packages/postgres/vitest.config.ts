import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Every test works in its own schema, so files run in parallel against one database; on a
    // loaded machine a migration plus a conformance case can take longer than vitest's 5 s.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
