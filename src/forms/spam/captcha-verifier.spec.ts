import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SecretBox } from '../../common/crypto/secret-box';
import { ErrorCode } from '../../common/errors/error-code';
import { AppConfigService } from '../../config/app-config.service';
import type { CaptchaProvider } from './captcha-secret';
import { CAPTCHA_FIELDS, CaptchaVerifier } from './captcha-verifier';

const SECRETS: Record<CaptchaProvider, string> = { turnstile: '0x4AAAAAAA-turnstile-secret', hcaptcha: '0x0000-hcaptcha-secret' };

interface SeenRequest {
  path: string;
  contentType: string | undefined;
  params: Record<string, string>;
}

/**
 * Stands in for both siteverify APIs (/turnstile, /hcaptcha) and answers like them. Tokens: `good`
 * passes; `http-500`, `slow`, `not-json` misbehave; anything else is an invalid response.
 */
function siteverifyStandIn(seen: SeenRequest[]): Server {
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const provider = req.url?.slice(1) as CaptchaProvider;
    const params = Object.fromEntries(new URLSearchParams(await readBody(req)));
    seen.push({ path: req.url ?? '', contentType: req.headers['content-type'], params });
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

    if (params.response === 'slow') {
      const timer = setTimeout(() => json(200, { success: true }), 2000);
      return void res.on('close', () => clearTimeout(timer));
    }
    if (params.response === 'http-500') return void res.writeHead(500).end('Internal Server Error');
    if (params.response === 'not-json') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>');
    if (params.secret !== SECRETS[provider]) return json(200, { success: false, 'error-codes': ['invalid-input-secret'] });
    if (params.response !== 'good') {
      const code = provider === 'turnstile' ? 'invalid-input-response' : 'invalid-or-already-seen-response';
      return json(200, { success: false, 'error-codes': [code] });
    }
    const passed = { success: true, challenge_ts: new Date().toISOString(), hostname: 'site.example' };
    return json(200, provider === 'turnstile' ? { ...passed, 'error-codes': [], action: '', cdata: '' } : { ...passed, credit: false });
  };
  return createServer((req, res) => void answer(req, res));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const rejection = (pattern: RegExp, details?: Record<string, unknown>) => ({
  code: ErrorCode.ChallengeFailed,
  status: 400,
  message: expect.stringMatching(pattern),
  ...(details ? { details } : {}),
});

const box = new SecretBox(AppConfigService.fromEnv({ ENCRYPTION_KEY: 'a'.repeat(64), ENCRYPTION_KEY_PREVIOUS: '' }));

describe('CaptchaVerifier', () => {
  const seen: SeenRequest[] = [];
  const server = siteverifyStandIn(seen);
  let verifier: CaptchaVerifier;
  let baseUrl: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    verifier = new CaptchaVerifier(
      {
        turnstileVerifyUrl: `${baseUrl}/turnstile`,
        hcaptchaVerifyUrl: `${baseUrl}/hcaptcha`,
        timeoutMs: 300,
      },
      box,
    );
  });
  beforeEach(() => (seen.length = 0));
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('names the fields the widgets post', () => {
    expect(CAPTCHA_FIELDS).toEqual({ turnstile: 'cf-turnstile-response', hcaptcha: 'h-captcha-response' });
  });

  describe.each(['turnstile', 'hcaptcha'] as const)('%s', (provider) => {
    it('passes a token the provider confirms, posting secret, response and remoteip as a form', async () => {
      await expect(verifier.verify(provider, SECRETS[provider], 'good', '203.0.113.7')).resolves.toBeUndefined();
      expect(seen).toEqual([
        {
          path: `/${provider}`,
          contentType: expect.stringMatching(/^application\/x-www-form-urlencoded/),
          params: { secret: SECRETS[provider], response: 'good', remoteip: '203.0.113.7' },
        },
      ]);
    });

    it('refuses a token the provider rejects, with its error codes', async () => {
      const code = provider === 'turnstile' ? 'invalid-input-response' : 'invalid-or-already-seen-response';
      await expect(verifier.verify(provider, SECRETS[provider], 'forged', '203.0.113.7')).rejects.toMatchObject(
        rejection(/rejected the token/, { provider, errorCodes: [code] }),
      );
    });

    it('refuses when the secret is wrong', async () => {
      await expect(verifier.verify(provider, 'wrong-secret', 'good', '203.0.113.7')).rejects.toMatchObject(
        rejection(/rejected the token/, { provider, errorCodes: ['invalid-input-secret'] }),
      );
    });

    it.each([undefined, '', '   '])('refuses a missing token (%p) without asking the provider', async (token) => {
      await expect(verifier.verify(provider, SECRETS[provider], token, '203.0.113.7')).rejects.toMatchObject(
        rejection(new RegExp(`token \\(field ${CAPTCHA_FIELDS[provider]}\\) is missing`)),
      );
      expect(seen).toHaveLength(0);
    });
  });

  it('opens a sealed secret and sends the secret itself; a plain one (stored before sealing) is sent as it is', async () => {
    const sealed = box.seal(SECRETS.turnstile);
    await expect(verifier.verify('turnstile', sealed, 'good', '203.0.113.7')).resolves.toBeUndefined();
    expect(seen[0].params.secret).toBe(SECRETS.turnstile);
    await expect(verifier.verify('turnstile', SECRETS.turnstile, 'good', '203.0.113.7')).resolves.toBeUndefined();
    expect(seen[1].params.secret).toBe(SECRETS.turnstile);
  });

  it('fails closed, asking no provider, when the secret was sealed under a key it does not have', async () => {
    const other = new SecretBox(AppConfigService.fromEnv({ ENCRYPTION_KEY: 'b'.repeat(64), ENCRYPTION_KEY_PREVIOUS: '' }));
    await expect(verifier.verify('hcaptcha', other.seal(SECRETS.hcaptcha), 'good', '203.0.113.7')).rejects.toMatchObject(
      rejection(/hCaptcha secret cannot be read; the token was not checked/, { provider: 'hcaptcha' }),
    );
    expect(seen).toHaveLength(0);
  });

  it('leaves remoteip out when the client address is unknown', async () => {
    await verifier.verify('turnstile', SECRETS.turnstile, 'good', '');
    expect(seen[0].params).toEqual({ secret: SECRETS.turnstile, response: 'good' });
  });

  describe('fails closed when the token cannot be checked', () => {
    it('on an HTTP error', async () => {
      await expect(verifier.verify('hcaptcha', SECRETS.hcaptcha, 'http-500', '203.0.113.7')).rejects.toMatchObject(
        rejection(/HTTP 500; the token was not checked/, { provider: 'hcaptcha', status: 500 }),
      );
    });

    it('on a time-out', async () => {
      const started = Date.now();
      await expect(verifier.verify('turnstile', SECRETS.turnstile, 'slow', '203.0.113.7')).rejects.toMatchObject(
        rejection(/did not answer in time/, { provider: 'turnstile' }),
      );
      expect(Date.now() - started).toBeLessThan(1500);
    });

    it('on an answer that is not JSON', async () => {
      await expect(verifier.verify('turnstile', SECRETS.turnstile, 'not-json', '203.0.113.7')).rejects.toMatchObject(
        rejection(/other than JSON/),
      );
    });

    it('when the provider cannot be reached', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/siteverify`;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const unreachable = new CaptchaVerifier({ turnstileVerifyUrl: url, hcaptchaVerifyUrl: url }, box);
      await expect(unreachable.verify('turnstile', SECRETS.turnstile, 'good', '203.0.113.7')).rejects.toMatchObject(
        rejection(/could not be reached/, { provider: 'turnstile' }),
      );
    });
  });
});
