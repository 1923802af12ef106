import { queryPoolContract } from '@switchboard/contracts';
import { describe } from 'vitest';
import { contractPools, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('redis', () => {
  queryPoolContract('redis', contractPools('sb-contract'));
});
