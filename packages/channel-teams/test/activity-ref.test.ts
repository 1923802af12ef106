import { describe, expect, it } from 'vitest';
import { activityRefKey, parseActivityRefKey } from '../src/activity-ref.js';

describe('activityRefKey', () => {
  it('reads back what it wrote, colons and percent signs in any part included', () => {
    const ref = {
      serviceUrl: 'https://smba.trafficmanager.net/amer/%3A/',
      conversationId: '19:c@thread.tacv2;messageid=1717999999999',
      activityId: '1:abc%25',
    };
    const key = activityRefKey(ref);
    expect(key.split(':')).toHaveLength(3);
    expect(parseActivityRefKey(key)).toEqual(ref);
  });

  it('is null for an id of another shape', () => {
    expect(parseActivityRefKey('42:1')).toBeNull();
    expect(parseActivityRefKey('a::b')).toBeNull();
  });
});
