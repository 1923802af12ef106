// What the pipelines use of undici, imported on their first call (`post-json.ts`). A module of
// our own between the two: the gateway's bundle keeps a library's named exports through a static
// import, while a dynamic import of a CommonJS library there yields its default export alone.
export { Agent, request } from 'undici';
