import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // The conformance properties run 1,000 cases each (up to 64 KiB per case): allow for a busy
    // machine instead of failing on the 5 s default (3.7 s alone; 31 s seen with CI's other tasks
    // on the same two cores).
    testTimeout: 90_000,
  },
});
