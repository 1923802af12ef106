import { defineConfig } from 'vite';

// The gateway serves `dist/` at /admin/ (apps/gateway/src/http/console-routes.ts): assets are
// addressed relative to that base, and nothing is fetched from elsewhere at run time.
export default defineConfig({
  root: 'src',
  base: '/admin/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    // One script and one stylesheet: the console is small, and the gateway keeps them in memory.
    modulePreload: false,
    reportCompressedSize: true,
    target: 'es2022',
  },
});
