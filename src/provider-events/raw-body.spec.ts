import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { isProviderEventsRequest, parseProviderEventsBody } from './raw-body';

const request = (body: string | Buffer | undefined, contentType = 'application/json') =>
  ({
    url: '/provider/events',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? Buffer.from(body) : body,
  }) as never;

function refusal(body: string | Buffer, contentType?: string): AppException {
  try {
    parseProviderEventsBody(request(body, contentType));
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    return err as AppException;
  }
  throw new Error('the body was accepted');
}

describe('raw body of provider events', () => {
  it('is read for POST /provider/events only, as Express routes it', () => {
    for (const url of ['/provider/events', '/Provider/Events/', '/provider/events?x=1']) {
      expect(isProviderEventsRequest({ url } as never)).toBe(true);
    }
    expect(isProviderEventsRequest({ url: '/email/send' } as never)).toBe(false);
    expect(isProviderEventsRequest({ url: '/provider/events/x' } as never)).toBe(false);
  });

  it('is parsed as the JSON parser parses other bodies', () => {
    expect(parseProviderEventsBody(request('{"a":[1]}'))).toEqual({ a: [1] });
    expect(parseProviderEventsBody(request(' [1]', 'application/json; charset=UTF-8'))).toEqual([1]);
    expect(parseProviderEventsBody(request(undefined))).toEqual({});
  });

  it('refuses what the JSON parser refuses, with its answers', () => {
    expect(refusal('{"a":').code).toBe(ErrorCode.MalformedJson);
    expect(refusal('"a string"').code).toBe(ErrorCode.MalformedJson);
    expect(refusal(`${'['.repeat(33)}${']'.repeat(33)}`).code).toBe(ErrorCode.ValidationFailed);
    expect(refusal(Buffer.from('{}', 'utf16le'), 'application/json; charset=utf-16le').code).toBe(ErrorCode.UnsupportedMediaType);
  });
});
