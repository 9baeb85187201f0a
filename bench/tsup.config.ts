import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { run: 'src/run.ts' },
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
