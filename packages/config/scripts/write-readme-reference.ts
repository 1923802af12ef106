// Rewrites the configuration reference in the repository README from the schema:
//   npm run docs:config
import { readFileSync, writeFileSync } from 'node:fs';
import { replaceReference } from '../src/readme-reference.js';

const readme = new URL('../../../README.md', import.meta.url);
writeFileSync(readme, replaceReference(readFileSync(readme, 'utf8')));
