import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, createHarness } from './harness.js';

describe('registerApiDocs', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  describe('when the channel routes are registered after it', () => {
    it('serves an OpenAPI 3 document listing POST /v1/messages with its body schema', async () => {
      h = await createHarness();
      const response = await h.server.inject({ method: 'GET', url: '/openapi.json' });

      expect(response.statusCode).toBe(200);
      const document = response.json();
      expect(document.openapi).toMatch(/^3\./);
      const post = document.paths['/v1/messages'].post;
      const schema = post.requestBody.content['application/json'].schema;
      expect(Object.keys(schema.properties).sort()).toEqual(
        ['chat_type', 'session_id', 'text', 'timeout_ms', 'user_id', 'user_name', 'wait'].sort(),
      );
      expect(schema.required).toEqual(expect.arrayContaining(['session_id', 'user_id', 'text']));
      expect(schema.required).not.toContain('wait');
      expect(schema.additionalProperties).toBe(false);
      expect(schema.properties.chat_type.enum).toEqual(['person', 'group']);
      expect(post.parameters).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: 'idempotency-key', in: 'header' })]),
      );
      expect(Object.keys(post.responses)).toEqual(
        expect.arrayContaining(['200', '202', '400', '401', '413', '429', '503']),
      );
      const answer = post.responses['200'].content['application/json'].schema;
      const reply = answer.properties.replies.items;
      expect(Object.keys(reply.properties).sort()).toEqual(['attachments', 'text']);
      expect(reply.properties.attachments.items.properties.type.enum).toEqual(['image', 'file', 'audio']);
      expect(document.paths['/v1/messages/{id}'].get).toBeDefined();
      expect(document.paths['/v1/sessions/{session_id}/events'].get).toBeDefined();
      expect(document.paths['/openapi.json']).toBeUndefined();
    });

    it('serves Swagger UI at /docs', async () => {
      h = await createHarness();
      const response = await h.server.inject({ method: 'GET', url: '/docs/' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('text/html');
    });
  });
});
