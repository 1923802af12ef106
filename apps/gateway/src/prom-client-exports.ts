// What the metrics use of prom-client, imported on the first scrape (`metrics.ts`). A module of
// our own between the two: the gateway's bundle keeps a library's named exports through a static
// import, while a dynamic import of a CommonJS library there yields its default export alone.
export { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
