import { bodyLimitOf, type BodyLimits } from './body-gate';

const limits: BodyLimits = { body: 1, api: 40, upload: 12, inFlight: 128 };
const request = (method: string, path: string, contentType = 'application/json') => ({
  method,
  path,
  headers: { 'content-type': contentType },
});

describe('bodyLimitOf', () => {
  it('gives an API call the large limit only with a valid key', () => {
    expect(bodyLimitOf(request('POST', '/email/send'), true, limits)).toBe(40);
    expect(bodyLimitOf(request('POST', '/email/send'), false, limits)).toBe(1);
  });

  it('holds the open routes to the small limit whoever calls, but for uploads to a form', () => {
    for (const path of ['/f/frm_1', '/acme.test/contact', '/provider/events', '/t/o/token', '/u/token']) {
      expect(bodyLimitOf(request('POST', path), true, limits)).toBe(1);
    }
    expect(bodyLimitOf(request('POST', '/f/frm_1', 'multipart/form-data; boundary=x'), false, limits)).toBe(12);
    expect(bodyLimitOf(request('POST', '/provider/events', 'multipart/form-data; boundary=x'), false, limits)).toBe(1);
  });
});
