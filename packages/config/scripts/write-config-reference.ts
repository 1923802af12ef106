// Rewrites the configuration reference in docs/configuration.md from the schema:
//   npm run docs:config
import { readFileSync, writeFileSync } from 'node:fs';
import { replaceReference } from '../src/reference-page.js';

const page = new URL('../../../docs/configuration.md', import.meta.url);
writeFileSync(page, replaceReference(readFileSync(page, 'utf8')));
