import type { Domain } from '../../domains/domain.entity';
import { formSender } from './form-sender';

describe('formSender', () => {
  const formsFrom = { name: 'Mailroom Forms', address: 'forms@mailroom.test' };
  const domain = (name: string, status: Domain['status']) => ({ name, status }) as Domain;

  it('sends from forms@ the form’s own domain when it is verified', () => {
    expect(formSender({ domain: domain('shop.test', 'verified') }, 'acme.test', formsFrom, 'Quote')).toEqual({
      from: { name: 'Quote', address: 'forms@shop.test' },
      systemSender: false,
    });
  });

  it('falls back to the account’s verified domain for a form without one, or whose own is not verified', () => {
    for (const own of [null, undefined, domain('pending.test', 'pending'), domain('failed.test', 'failed')]) {
      expect(formSender({ domain: own }, 'acme.test', formsFrom, 'Contact')).toEqual({
        from: { name: 'Contact', address: 'forms@acme.test' },
        systemSender: false,
      });
    }
  });

  it('uses FORMS_FROM (as a system sender) only for an account without a verified domain', () => {
    expect(formSender({ domain: domain('pending.test', 'pending') }, null, formsFrom, 'Contact')).toEqual({
      from: formsFrom,
      systemSender: true,
    });
    expect(formSender({ domain: null }, null, { name: '', address: 'forms@mailroom.test' }, 'Contact')).toEqual({
      from: { name: 'Contact', address: 'forms@mailroom.test' },
      systemSender: true,
    });
  });

  it('keeps CR, LF and quotes out of the display name', () => {
    expect(formSender({ domain: null }, 'acme.test', formsFrom, 'A\r\nBcc: x@evil.test "q"').from.name).toBe('A  Bcc: x@evil.test  q ');
  });
});
