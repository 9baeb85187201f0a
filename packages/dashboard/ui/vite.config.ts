import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/*
 * The dashboard page, built to ../dist/ui as one index.html, one script and one stylesheet. The
 * server appends `?token=…` to every `./assets/…` URL it finds in index.html, so the build must
 * not split code: no lazy chunks, no preloads, nothing loaded that index.html does not name.
 */
const uiDir = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: uiDir,
  base: './',
  publicDir: false,
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    cssCodeSplit: false,
    modulePreload: false,
    // Everything the page uses is in its script or stylesheet, never a separate file.
    assetsInlineLimit: Number.POSITIVE_INFINITY,
    target: 'es2022',
    rolldownOptions: {
      output: {
        codeSplitting: false,
      },
    },
  },
});
