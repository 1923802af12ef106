import { describe, expect, it } from 'vitest';
import { deliveryKey } from '../../src/inbound/delivery-key.js';

describe('deliveryKey', () => {
  describe('when the parts hold no colon', () => {
    it('joins them with colons', () => {
      expect(deliveryKey('slack', 'T0001', 'Ev0001')).toBe('slack:T0001:Ev0001');
      expect(deliveryKey('telegram', 42)).toBe('telegram:42');
    });
  });

  describe('when parts hold colons or percent signs', () => {
    it('keeps different part lists apart and stays the same for the same parts', () => {
      expect(deliveryKey('a:b', 'c')).not.toBe(deliveryKey('a', 'b:c'));
      expect(deliveryKey('a%3Ab', 'c')).not.toBe(deliveryKey('a:b', 'c'));
      expect(deliveryKey('a:b', 'c')).toBe(deliveryKey('a:b', 'c'));
    });
  });
});
