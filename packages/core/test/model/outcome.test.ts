import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { createOutcomeBus, type Outcome } from '../../src/model/outcome.js';
import { createSecretMasker } from '../../src/observability/secret-masker.js';

const TOKEN = '123456789:AAH-outcome-secret';

const outcome: Outcome = {
  kind: 'dead_lettered',
  reason: 'delivery_failed',
  at: 1,
  session: 'telegram:tg:person:42',
  message: inboundMessage(),
  error: { code: 'SB_CHANNEL_SEND_FAILED', message: `proxy refused /bot${TOKEN}/sendMessage` },
};

describe('createOutcomeBus', () => {
  describe('when built with a masker and an outcome error quotes a secret', () => {
    it('hands every listener the error with the secret masked', () => {
      const bus = createOutcomeBus(undefined, createSecretMasker([TOKEN]));
      const seen: Outcome[] = [];
      bus.subscribe((received) => seen.push(received));
      bus.subscribe((received) => seen.push(received));

      bus.record(outcome);

      expect(seen.map((received) => received.error)).toEqual([
        { code: 'SB_CHANNEL_SEND_FAILED', message: 'proxy refused /bot***/sendMessage' },
        { code: 'SB_CHANNEL_SEND_FAILED', message: 'proxy refused /bot***/sendMessage' },
      ]);
      expect(seen[0]).toMatchObject({ kind: 'dead_lettered', message: { id: outcome.message.id } });
    });
  });

  describe('when an outcome has no error', () => {
    it('passes the same object on', () => {
      const bus = createOutcomeBus(undefined, createSecretMasker([TOKEN]));
      const { error: _error, ...completed } = { ...outcome, kind: 'completed' as const, reason: undefined };
      let seen: Outcome | undefined;
      bus.subscribe((received) => {
        seen = received;
      });

      bus.record(completed);

      expect(seen).toBe(completed);
    });
  });
});

describe('createOutcomeBus with the commit that ends the message', () => {
  describe('when that commit succeeds', () => {
    it('calls the listeners that store outcomes at once and the others once it committed', async () => {
      const bus = createOutcomeBus();
      const heard: string[] = [];
      bus.subscribe(() => heard.push('metrics'));
      bus.subscribe(() => heard.push('audit'), { stores: true });
      let commit: (done: boolean) => void = () => {};
      bus.record(
        outcome,
        new Promise<boolean>((resolve) => {
          commit = resolve;
        }),
      );
      expect(heard).toEqual(['audit']);
      commit(true);
      await Promise.resolve();
      await Promise.resolve();
      expect(heard).toEqual(['audit', 'metrics']);
    });
  });

  describe('when that commit fails', () => {
    it('tells no listener but those that store outcomes', async () => {
      const bus = createOutcomeBus();
      const heard: string[] = [];
      bus.subscribe(() => heard.push('metrics'));
      bus.subscribe(() => heard.push('audit'), { stores: true });
      const committed = Promise.resolve(false);
      bus.record(outcome, committed);
      await committed;
      await Promise.resolve();
      expect(heard).toEqual(['audit']);
    });
  });
});

describe('createOutcomeBus with onRecorded', () => {
  /** A write a listener made, settled by the test. */
  function pendingWrite() {
    let land: (done: boolean) => void = () => {};
    const write = new Promise<boolean>((resolve) => {
      land = resolve;
    });
    return { write, land };
  }

  describe('when every write the listeners made of an outcome landed', () => {
    it('hears the outcome as recorded (unmasked) once, after the last write', async () => {
      const recorded: Outcome[] = [];
      const bus = createOutcomeBus(undefined, createSecretMasker([TOKEN]), (heard) => recorded.push(heard));
      const audit = pendingWrite();
      const status = pendingWrite();
      bus.subscribe(() => audit.write, { stores: true });
      bus.subscribe(() => status.write);
      bus.subscribe(() => 3);
      bus.record(outcome);
      audit.land(true);
      await audit.write;
      await Promise.resolve();
      expect(recorded).toEqual([]);
      status.land(true);
      await status.write;
      await Promise.resolve();
      expect(recorded).toEqual([outcome]);
    });
  });

  describe('when a write failed', () => {
    it('does not hear the outcome: it stays kept for another try', async () => {
      const recorded: Outcome[] = [];
      const bus = createOutcomeBus(undefined, undefined, (heard) => recorded.push(heard));
      bus.subscribe(() => Promise.resolve(true), { stores: true });
      bus.subscribe(() => Promise.resolve(false));
      bus.record(outcome);
      await new Promise((resolve) => setImmediate(resolve));
      expect(recorded).toEqual([]);
    });
  });

  describe('when the commit that ends the message failed', () => {
    it('does not hear the outcome', async () => {
      const recorded: Outcome[] = [];
      const bus = createOutcomeBus(undefined, undefined, (heard) => recorded.push(heard));
      bus.subscribe(() => Promise.resolve(true), { stores: true });
      bus.record(outcome, Promise.resolve(false));
      await new Promise((resolve) => setImmediate(resolve));
      expect(recorded).toEqual([]);
      bus.record(outcome, Promise.resolve(true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(recorded).toEqual([outcome]);
    });
  });
});

describe('createOutcomeBus recovering a kept outcome', () => {
  describe('when another replica recovers an outcome its settling replica may have counted', () => {
    it('tells only the listeners that write its records (masked), and hears it once they landed', async () => {
      const recorded: Outcome[] = [];
      const bus = createOutcomeBus(undefined, createSecretMasker([TOKEN]), (heard) => recorded.push(heard));
      const audit: Outcome[] = [];
      const status: Outcome[] = [];
      const counted: Outcome[] = [];
      bus.subscribe(
        (heard) => {
          audit.push(heard);
          return Promise.resolve(true);
        },
        { stores: true },
      );
      bus.subscribe(
        (heard) => {
          status.push(heard);
          return Promise.resolve(true);
        },
        { records: true },
      );
      bus.subscribe((heard) => counted.push(heard));
      bus.recover(outcome);
      await new Promise((resolve) => setImmediate(resolve));
      expect(counted).toEqual([]);
      expect(audit.map((heard) => heard.error?.message)).toEqual(['proxy refused /bot***/sendMessage']);
      expect(status).toHaveLength(1);
      expect(recorded).toEqual([outcome]);
    });
  });
});
