import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFetchError, messagingApi, validateSignature } from '@line/bot-sdk';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { afterEach, describe, expect, it } from 'vitest';

// The fake against the real LINE SDK: what the channel's tests rely on is what LINE's own
// client expects of api.line.me.

const USER = `U${'01'.repeat(16)}`;

let fake: FakeLine | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function clientOf(options: { token?: string } = {}) {
  fake = await startFakeLine();
  return {
    fake,
    client: new messagingApi.MessagingApiClient({
      channelAccessToken: options.token ?? fake.channelAccessToken,
      baseURL: fake.url,
    }),
  };
}

describe('fake LINE with @line/bot-sdk', () => {
  describe('when a push carries a retry key already accepted', () => {
    it('answers 409 with the request id of the accepted one, and sends nothing again', async () => {
      const { fake, client } = await clientOf();
      const key = '123e4567-e89b-12d3-a456-426614174000';
      const request = { to: USER, messages: [{ type: 'text' as const, text: 'hi' }] };
      const first = await client.pushMessageWithHttpInfo(request, key);
      expect(first.body.sentMessages).toHaveLength(1);
      const again = await client.pushMessage(request, key).catch((error: unknown) => error);
      expect(again).toBeInstanceOf(HTTPFetchError);
      const conflict = again as HTTPFetchError;
      expect(conflict.status).toBe(409);
      expect(conflict.headers.get('x-line-accepted-request-id')).toBe(
        first.httpResponse.headers.get('x-line-request-id'),
      );
      expect(JSON.parse(conflict.body)).toMatchObject({ sentMessages: first.body.sentMessages });
      expect(fake.deliveredTo(USER)).toEqual(['hi']);
    });
  });

  describe('when a reply token is used', () => {
    it('takes it once, for the chat of its event', async () => {
      const { fake, client } = await clientOf();
      const { replyToken } = fake.textEvent({ text: 'hello' });
      const messages = [{ type: 'text' as const, text: 'answer' }];
      await client.replyMessage({ replyToken, messages });
      const again = await client.replyMessage({ replyToken, messages }).catch((error: unknown) => error);
      expect(again).toMatchObject({ status: 400 });
      expect(JSON.parse((again as HTTPFetchError).body)).toEqual({ message: 'Invalid reply token' });
      expect(fake.deliveredTo(USER)).toEqual(['answer']);
    });
  });

  describe('when a call breaks LINE limits or has a wrong token', () => {
    it('refuses 6 messages, a text over 5000 characters and a bad token', async () => {
      const { fake, client } = await clientOf();
      const six = Array.from({ length: 6 }, () => ({ type: 'text' as const, text: 'x' }));
      await expect(client.pushMessage({ to: USER, messages: six })).rejects.toMatchObject({ status: 400 });
      const long = [{ type: 'text' as const, text: 'x'.repeat(5001) }];
      await expect(client.pushMessage({ to: USER, messages: long })).rejects.toMatchObject({ status: 400 });
      const stranger = new messagingApi.MessagingApiClient({
        channelAccessToken: 'wrong',
        baseURL: fake.url,
      });
      await expect(stranger.getBotInfo()).rejects.toMatchObject({ status: 401 });
      expect(await client.getBotInfo()).toMatchObject({ userId: fake.botUserId });
      expect(fake.sent()).toEqual([]);
    });
  });

  describe('when a push carries image messages', () => {
    it('takes an image at HTTPS URLs, and refuses an http URL or one over 2000 characters naming the property', async () => {
      const { fake, client } = await clientOf();
      const url = 'https://example.com/a.png';
      const image = { type: 'image' as const, originalContentUrl: url, previewImageUrl: url };
      await client.pushMessage({ to: USER, messages: [image, { type: 'text', text: 'a' }] });
      const http = { ...image, previewImageUrl: 'http://example.com/a.png' };
      const refused = await client
        .pushMessage({ to: USER, messages: [http] })
        .catch((error: unknown) => error);
      expect(JSON.parse((refused as HTTPFetchError).body).details).toEqual([
        { message: 'must be https', property: 'messages[0].previewImageUrl' },
      ]);
      const long = { ...image, originalContentUrl: `https://example.com/${'a'.repeat(2000)}` };
      await expect(client.pushMessage({ to: USER, messages: [long] })).rejects.toMatchObject({ status: 400 });
      expect(
        fake.sent().map(({ type, originalContentUrl, text }) => [type, originalContentUrl ?? text]),
      ).toEqual([
        ['image', url],
        ['text', 'a'],
      ]);
    });
  });

  describe('when told to fail', () => {
    it('answers 429, then 500, then succeeds', async () => {
      const { fake, client } = await clientOf();
      fake.failNext('push', 1, { kind: 'rate_limited' });
      fake.failNext('push', 1, { kind: 'http_status', status: 500 });
      const request = { to: USER, messages: [{ type: 'text' as const, text: 'x' }] };
      await expect(client.pushMessage(request)).rejects.toMatchObject({ status: 429 });
      await expect(client.pushMessage(request)).rejects.toMatchObject({ status: 500 });
      await client.pushMessage(request);
      expect(fake.callsTo('push').map((call) => call.status)).toEqual([429, 500, 200]);
    });
  });

  describe('when it delivers a webhook', () => {
    it('signs the raw body the way the SDK verifies it', async () => {
      fake = await startFakeLine();
      const received: Array<{ body: string; signature: string | undefined }> = [];
      const receiver = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        request.on('end', () => {
          const signature = request.headers['x-line-signature'];
          received.push({ body, signature: typeof signature === 'string' ? signature : undefined });
          response.end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
        await fake.deliverWebhook(url, [fake.textEvent({ text: 'こんにちは' })]);
        const [delivery] = received;
        expect(validateSignature(delivery?.body ?? '', fake.channelSecret, delivery?.signature ?? '')).toBe(
          true,
        );
        expect(validateSignature(delivery?.body ?? '', 'other-secret', delivery?.signature ?? '')).toBe(
          false,
        );
        expect(JSON.parse(delivery?.body ?? '')).toMatchObject({
          destination: fake.botUserId,
          events: [{ type: 'message' }],
        });
      } finally {
        await new Promise((resolve) => receiver.close(resolve));
      }
    });
  });
});
