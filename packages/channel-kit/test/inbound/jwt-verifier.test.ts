import { createHmac } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isSwitchboardError } from '@switchboard/core';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JwtVerifierOptions, createJwtVerifier } from '../../src/inbound/jwt-verifier.js';

const ISSUER = 'https://api.botframework.com';
const AUDIENCE = 'app-id-1';
const NOW_MS = Date.UTC(2026, 0, 1);

/** A fake identity provider on loopback: an OpenID metadata document and the JWKS it names. */
interface IdentityProvider {
  url: string;
  requests: string[];
  /** Status of the next answers; 200 serves the documents. */
  status: number;
  jwks: { keys: JWK[] };
}

let provider: IdentityProvider;
let server: Server;
let privateKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig' };
  provider = { url: '', requests: [], status: 200, jwks: { keys: [jwk] } };
  server = createServer((request, response) => {
    provider.requests.push(request.url ?? '');
    if (provider.status !== 200) {
      response.writeHead(provider.status).end();
      return;
    }
    const body =
      request.url === '/.well-known/openid-configuration'
        ? { issuer: ISSUER, jwks_uri: `${provider.url}/keys` }
        : provider.jwks;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function reset() {
  provider.requests = [];
  provider.status = 200;
}

async function token(
  claims: { iss?: string; aud?: string; expMs?: number | null } = {},
  options: { kid?: string; key?: CryptoKey } = {},
): Promise<string> {
  const jwt = new SignJWT({ serviceurl: 'https://smba.example' })
    .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? 'key-1' })
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? AUDIENCE)
    .setIssuedAt(Math.floor(NOW_MS / 1000));
  if (claims.expMs !== null) jwt.setExpirationTime(Math.floor((claims.expMs ?? NOW_MS + 3_600_000) / 1000));
  return jwt.sign(options.key ?? privateKey);
}

function verifier(options: Partial<Omit<JwtVerifierOptions, 'jwksUrl' | 'openIdMetadataUrl'>> = {}) {
  return createJwtVerifier({
    jwksUrl: `${provider.url}/keys`,
    issuer: ISSUER,
    audience: AUDIENCE,
    now: () => NOW_MS,
    ...options,
  });
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (isSwitchboardError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a rejection');
}

describe('createJwtVerifier', () => {
  describe('when the token is signed by a published key with the right claims', () => {
    it('resolves its claims, whatever the case of Bearer', async () => {
      reset();
      const verify = verifier();
      const jwt = await token();
      expect(await verify.verify(`Bearer ${jwt}`)).toMatchObject({ iss: ISSUER, aud: AUDIENCE });
      expect(await verify.verify(`bearer ${jwt}`)).toMatchObject({ serviceurl: 'https://smba.example' });
      expect(await verify.verify(`BEARER ${jwt}`)).toMatchObject({ iss: ISSUER });
      // The key set is fetched once and cached.
      expect(provider.requests).toEqual(['/keys']);
    });
  });

  describe('when the keys are named by OpenID metadata', () => {
    it('reads the metadata once, then the JWKS it names', async () => {
      reset();
      const verify = createJwtVerifier({
        openIdMetadataUrl: `${provider.url}/.well-known/openid-configuration`,
        issuer: ISSUER,
        audience: AUDIENCE,
        now: () => NOW_MS,
      });
      const jwt = await token();
      await verify.verify(`Bearer ${jwt}`);
      await verify.verify(`Bearer ${jwt}`);
      expect(provider.requests).toEqual(['/.well-known/openid-configuration', '/keys']);
    });
  });

  describe('when the Authorization header is missing or no bearer token', () => {
    it('refuses with SB_HTTP_UNAUTHORIZED naming the header', async () => {
      const verify = verifier();
      for (const header of [undefined, '', 'Bearer', 'Basic dXNlcjpwYXNz', `Bearer ${await token()} extra`]) {
        expect(await failure(verify.verify(header))).toEqual({
          code: 'SB_HTTP_UNAUTHORIZED',
          message: 'Authorization: expected "Bearer <token>"',
        });
      }
      expect(await failure(verify.verify('Bearer not.a.jwt'))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: the token is malformed',
      });
    });
  });

  describe('when the issuer or audience is not the accepted one', () => {
    it('refuses naming the claim', async () => {
      const verify = verifier();
      expect(await failure(verify.verify(`Bearer ${await token({ iss: 'https://evil.example' })}`))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: claim iss: not accepted',
      });
      expect(await failure(verify.verify(`Bearer ${await token({ aud: 'other-app' })}`))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: claim aud: not accepted',
      });
    });
  });

  describe('when exp is missing or passed', () => {
    it('refuses the token', async () => {
      const verify = verifier({ clockToleranceMs: 60_000 });
      expect(await failure(verify.verify(`Bearer ${await token({ expMs: null })}`))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: claim exp: missing',
      });
      expect(await failure(verify.verify(`Bearer ${await token({ expMs: NOW_MS - 61_000 })}`))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: the token has expired',
      });
      // Within the clock tolerance it still passes.
      await verify.verify(`Bearer ${await token({ expMs: NOW_MS - 30_000 })}`);
    });
  });

  describe('when the token is signed by a key that is not published', () => {
    it('refuses it', async () => {
      const other = (await generateKeyPair('RS256')).privateKey;
      const verify = verifier();
      expect(await failure(verify.verify(`Bearer ${await token({}, { key: other })}`))).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'Authorization: the signature does not verify',
      });
      expect(await failure(verify.verify(`Bearer ${await token({}, { key: other, kid: 'key-9' })}`))).toEqual(
        {
          code: 'SB_HTTP_UNAUTHORIZED',
          message: 'Authorization: no published key matches the token',
        },
      );
    });
  });

  describe('when the token picks its own algorithm', () => {
    /** A JWT of `header` and the default claims, signed with `sign` over the signing input. */
    function handMade(header: object, sign: (input: string) => string): string {
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const claims = { iss: ISSUER, aud: AUDIENCE, exp: Math.floor(NOW_MS / 1000) + 3_600 };
      const input = `${part(header)}.${part(claims)}`;
      return `${input}.${sign(input)}`;
    }

    it('refuses alg none and HS256 keyed with the published public key, without fetching keys', async () => {
      reset();
      const verify = verifier();
      const none = handMade({ alg: 'none', kid: 'key-1' }, () => '');
      const publicJwk = JSON.stringify(provider.jwks.keys[0]);
      const confused = handMade({ alg: 'HS256', kid: 'key-1' }, (input) =>
        createHmac('sha256', publicJwk).update(input).digest('base64url'),
      );
      for (const jwt of [none, confused]) {
        expect(await failure(verify.verify(`Bearer ${jwt}`))).toEqual({
          code: 'SB_HTTP_UNAUTHORIZED',
          message: 'Authorization: the signature algorithm is not accepted',
        });
      }
      expect(provider.requests).toEqual([]);
    });

    it('refuses an accepted algorithm the key set cannot serve 401, and good tokens still pass', async () => {
      reset();
      const verify = verifier({ algorithms: ['RS256', 'HS256'] });
      const hmac = handMade({ alg: 'HS256', kid: 'key-1' }, (input) =>
        createHmac('sha256', 'guessed').update(input).digest('base64url'),
      );
      expect((await failure(verify.verify(`Bearer ${hmac}`))).code).toBe('SB_HTTP_UNAUTHORIZED');
      expect(await verify.verify(`Bearer ${await token()}`)).toMatchObject({ iss: ISSUER });
    });
  });

  describe('when a flood of tokens names keys that are not published', () => {
    it('refuses each 401 and fetches the key set once, so the identity provider is not hammered', async () => {
      reset();
      const verify = verifier();
      const other = (await generateKeyPair('RS256')).privateKey;
      for (let i = 0; i < 20; i += 1) {
        const jwt = await token({}, { key: other, kid: `unknown-${i}` });
        expect((await failure(verify.verify(`Bearer ${jwt}`))).code).toBe('SB_HTTP_UNAUTHORIZED');
      }
      expect(provider.requests).toEqual(['/keys']);
      expect(await verify.verify(`Bearer ${await token()}`)).toMatchObject({ iss: ISSUER });
    });
  });

  describe('when the identity provider cannot be reached', () => {
    it('fails SB_CHANNEL_UNREACHABLE, fetches nothing during the cooldown, and tries again after it', async () => {
      reset();
      provider.status = 500;
      let nowMs = NOW_MS;
      const verify = verifier({ cooldownMs: 30_000, now: () => nowMs });
      const jwt = await token();
      const first = await failure(verify.verify(`Bearer ${jwt}`));
      expect(first).toEqual({
        code: 'SB_CHANNEL_UNREACHABLE',
        message: `signing keys could not be fetched from ${provider.url}/keys`,
      });
      expect(provider.requests).toEqual(['/keys']);
      for (let i = 0; i < 5; i += 1) {
        expect((await failure(verify.verify(`Bearer ${jwt}`))).code).toBe('SB_CHANNEL_UNREACHABLE');
      }
      expect(provider.requests).toEqual(['/keys']);
      provider.status = 200;
      nowMs += 30_000;
      expect(await verify.verify(`Bearer ${jwt}`)).toMatchObject({ iss: ISSUER });
      expect(provider.requests).toEqual(['/keys', '/keys']);
    });

    it('treats a dead metadata URL the same way', async () => {
      reset();
      provider.status = 503;
      const verify = createJwtVerifier({
        openIdMetadataUrl: `${provider.url}/.well-known/openid-configuration`,
        issuer: ISSUER,
        audience: AUDIENCE,
        now: () => NOW_MS,
      });
      const jwt = await token();
      expect((await failure(verify.verify(`Bearer ${jwt}`))).code).toBe('SB_CHANNEL_UNREACHABLE');
      expect((await failure(verify.verify(`Bearer ${jwt}`))).code).toBe('SB_CHANNEL_UNREACHABLE');
      expect(provider.requests).toEqual(['/.well-known/openid-configuration']);
    });
  });
});
