import { AppConfigService } from '../../config/app-config.service';
import { FormFileLinks } from './file-links';

describe('FormFileLinks', () => {
  const links = new FormFileLinks(AppConfigService.fromEnv({ PUBLIC_URL: 'https://mail.example' }));
  const target = { submissionId: 'sub_abc123', index: 2 };
  const tokenOf = (url: string) => url.slice('https://mail.example/forms/files/'.length);

  it('names the submission and file, for 30 days after the link is made', () => {
    const made = new Date('2026-06-01T10:00:00Z');
    const url = links.url(target, made);
    expect(url).toMatch(/^https:\/\/mail\.example\/forms\/files\/[\w-]+\.[\w-]+$/);
    expect(links.verify(tokenOf(url), new Date('2026-06-30T10:00:00Z'))).toEqual(target);
    expect(links.verify(tokenOf(url), new Date('2026-07-01T10:00:01Z'))).toBe('expired');
  });

  it('gives a link made now, for a notification sent long after the submission, its whole 30 days', () => {
    const url = links.url(target);
    const in29Days = new Date(Date.now() + 29 * 24 * 60 * 60 * 1000);
    expect(links.verify(tokenOf(url), in29Days)).toEqual(target);
    expect(links.verify(tokenOf(url), new Date(Date.now() + 31 * 24 * 60 * 60 * 1000))).toBe('expired');
  });

  it('refuses a tampered or made-up token', () => {
    const token = links.token(target, new Date(Date.now() + 60_000));
    const [body, mac] = token.split('.');
    const other = Buffer.from(Buffer.from(body, 'base64url').toString().replace(':2:', ':3:')).toString('base64url');
    expect(links.verify(`${other}.${mac}`)).toBeNull();
    expect(links.verify('abc.def')).toBeNull();
    expect(links.verify(`${token}.x`)).toBeNull();
  });
});
