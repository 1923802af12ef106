// prom-client as the metrics use it, imported on the first scrape (`metrics.ts`); why a module of
// our own between the two: docs/design.md §9.
export { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
