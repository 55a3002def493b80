import type { ArgumentsHost } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { Form } from '../form.entity';
import type { FormTargets } from './form-targets';
import type { OriginPolicy } from './origin-policy';
import { rememberForm, SubmissionErrorsFilter } from './submission-errors.filter';

const SITE = 'https://site.test';

function exchange(path: string, headers: Record<string, string>, auth?: unknown) {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const request = {
    method: 'POST',
    path,
    auth,
    body: {},
    get: (name: string) => lower[name.toLowerCase()],
    is: () => false,
  } as unknown as Request;
  const headersSet: Record<string, unknown> = {};
  const response = {
    headersSent: false,
    statusCode: 400,
    vary: jest.fn(),
    setHeader: (name: string, value: unknown) => (headersSet[name.toLowerCase()] = value),
    getHeader: (name: string) => headersSet[name.toLowerCase()],
    json: jest.fn(),
    send: jest.fn(),
  } as unknown as Response;
  return { request, response, headersSet };
}

async function run(filter: SubmissionErrorsFilter, exception: unknown, request: Request, response: Response): Promise<void> {
  await new Promise<void>((resolve) => {
    const host = { getArgs: () => [request, response, () => resolve()] } as unknown as ArgumentsHost;
    filter.catch(exception, host);
  });
}

describe('SubmissionErrorsFilter', () => {
  const form = { id: 'frm_1', accountId: 'acc_1', settings: {} } as Form;
  let targets: { resolve: jest.Mock; lookup: jest.Mock };
  let origins: { allows: jest.Mock };
  let filter: SubmissionErrorsFilter;

  beforeEach(() => {
    targets = { resolve: jest.fn(), lookup: jest.fn().mockResolvedValue(form) };
    origins = { allows: jest.fn((_form: Form, origin: { origin: string } | null) => Promise.resolve(origin?.origin === SITE)) };
    filter = new SubmissionErrorsFilter(targets as unknown as FormTargets, origins as unknown as OriginPolicy);
  });

  it('uses the form the pipeline found: no second lookup', async () => {
    const { request, response, headersSet } = exchange('/c/shop/contact', { Origin: SITE });
    rememberForm(request, form);
    await run(filter, AppException.validation([{ field: 'email', message: 'must be a valid email address' }]), request, response);
    expect(targets.resolve).not.toHaveBeenCalled();
    expect(targets.lookup).not.toHaveBeenCalled();
    expect(headersSet['access-control-allow-origin']).toBe(SITE);
  });

  it('before the pipeline, looks the form up with the request’s key, through the lookup that counts no failure', async () => {
    const auth = { accountId: 'acc_1', keyType: 'admin' };
    const { request, response, headersSet } = exchange('/c/shop/contact', { Origin: SITE }, auth);
    await run(filter, new AppException(ErrorCode.PayloadTooLarge, 'too large'), request, response);
    expect(targets.resolve).not.toHaveBeenCalled();
    expect(targets.lookup).toHaveBeenCalledWith(
      { kind: 'collection', collection: 'shop', slug: 'contact' },
      expect.objectContaining({ auth, origin: expect.objectContaining({ origin: SITE }) }),
    );
    expect(headersSet['access-control-allow-origin']).toBe(SITE);
  });

  it('looks nothing up after a 404', async () => {
    const { request, response, headersSet } = exchange('/f/frm_missing', { Origin: SITE });
    await run(filter, AppException.notFound('Form', 'frm_missing'), request, response);
    expect(targets.lookup).not.toHaveBeenCalled();
    expect(headersSet['access-control-allow-origin']).toBeUndefined();
  });
});
