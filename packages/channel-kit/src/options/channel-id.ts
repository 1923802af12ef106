import { z } from 'zod';

/** `channels[].id`: names the channel in routing rules, sessions, logs and metrics. */
export const ChannelIdSchema = z.string().regex(/^[A-Za-z0-9_-]+$/, 'use letters, digits, _ and -');
