#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2));
// `serve` has drained and closed everything by now; exit even if a client keeps a socket open.
process.exit(code);
