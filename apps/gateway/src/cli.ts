#!/usr/bin/env node
import { holdReloadSignal } from './reload-signal.js';

// Before the rest is loaded (which takes a while): a SIGHUP must not end a starting gateway.
const reloadSignal = holdReloadSignal();
const { main } = await import('./main.js');
const code = await main(process.argv.slice(2), undefined, reloadSignal);
// `serve` has drained and closed everything by now; exit even if a client keeps a socket open.
process.exit(code);
