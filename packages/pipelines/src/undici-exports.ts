// undici as the pipelines use it, imported on their first call (`post-json.ts`). Why a module
// of our own between the two: docs/design.md §9 (a bundle keeps a CommonJS library's named
// exports only through a static import).
export { Agent, request } from 'undici';
