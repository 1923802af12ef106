import { describe, expect, it } from 'vitest';
import { mimeEssence } from '../../src/outbound/mime-essence.js';

describe('mimeEssence', () => {
  it('drops the parameters and lower-cases the type', () => {
    expect(mimeEssence('Audio/OGG; codecs=opus')).toBe('audio/ogg');
    expect(mimeEssence(' image/png ')).toBe('image/png');
  });

  it('is empty for no type', () => {
    expect(mimeEssence(undefined)).toBe('');
  });
});
