import { AppConfigService } from '../config/app-config.service';
import { TrackingTokens } from './tracking-tokens';

const config = (key: string, previous = '') =>
  AppConfigService.fromEnv({
    ENCRYPTION_KEY: key.repeat(64),
    ENCRYPTION_KEY_PREVIOUS: previous.repeat(64),
    PUBLIC_URL: 'https://mr.test/',
  });

describe('TrackingTokens', () => {
  const tokens = new TrackingTokens(config('a'));
  const tokenOf = (url: string) => url.split('/').pop()!;

  it('makes links under PUBLIC_URL that verify to their target, and only for their kind', () => {
    const open = tokens.openUrl('msg_abc123');
    expect(open).toMatch(/^https:\/\/mr\.test\/t\/o\/[\w-]+\.[\w-]{22}$/);
    expect(tokens.verify('o', tokenOf(open))).toEqual({ kind: 'o', messageId: 'msg_abc123' });
    expect(tokens.verify('c', tokenOf(tokens.clickUrl('msg_abc123', 7)))).toEqual({ kind: 'c', messageId: 'msg_abc123', link: 7 });
    expect(tokens.verify('u', tokenOf(tokens.unsubscribeUrl('msg_abc123')))).toEqual({ kind: 'u', messageId: 'msg_abc123' });
    expect(tokens.verify('c', tokenOf(open))).toBeNull();
    expect(tokens.verify('u', tokenOf(open))).toBeNull();
  });

  it('is deterministic: the same message gets the same links at every delivery attempt', () => {
    expect(tokens.clickUrl('msg_abc123', 2)).toBe(tokens.clickUrl('msg_abc123', 2));
    expect(tokens.clickUrl('msg_abc123', 2)).not.toBe(tokens.clickUrl('msg_abc123', 3));
  });

  it('refuses a changed MAC, a changed body, another key’s token and malformed input', () => {
    const token = tokenOf(tokens.clickUrl('msg_abc123', 1));
    const [body, mac] = token.split('.');
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    expect(tokens.verify('c', `${body}.${flip(mac, 3)}`)).toBeNull();
    const otherLink = Buffer.from('c:msg_abc123:2').toString('base64url');
    expect(tokens.verify('c', `${otherLink}.${mac}`)).toBeNull();
    expect(new TrackingTokens(config('b')).verify('c', token)).toBeNull();
    for (const bad of ['', '.', body, `${token}.x`, `${body}.${mac.slice(1)}`, 'x'.repeat(300)]) expect(tokens.verify('c', bad)).toBeNull();
  });

  it('verifies links made under a previous key, and makes new ones under the current key only', () => {
    const rotated = new TrackingTokens(config('b', 'a'));
    const oldClick = tokenOf(tokens.clickUrl('msg_abc123', 4));
    expect(rotated.verify('c', oldClick)).toEqual({ kind: 'c', messageId: 'msg_abc123', link: 4 });
    expect(rotated.verify('u', tokenOf(tokens.unsubscribeUrl('msg_abc123')))).toEqual({ kind: 'u', messageId: 'msg_abc123' });
    expect(rotated.verify('u', oldClick)).toBeNull();

    const fresh = tokenOf(rotated.unsubscribeUrl('msg_abc123'));
    expect(fresh).toBe(tokenOf(new TrackingTokens(config('b')).unsubscribeUrl('msg_abc123')));
    expect(tokens.verify('u', fresh)).toBeNull();
    expect(new TrackingTokens(config('b')).verify('c', oldClick)).toBeNull();
    expect(new TrackingTokens(config('b', 'c')).verify('c', oldClick)).toBeNull();
    expect(new TrackingTokens(config('c', 'b')).verify('u', fresh)).toEqual({ kind: 'u', messageId: 'msg_abc123' });
  });

  describe('unsubscribe links of one recipient', () => {
    const recipients = ['ada@example.org', 'Bo@Example.org', 'cy@example.org'];

    it('name their recipient by a tag (no address in the link), and verify alongside the links naming nobody', () => {
      const url = tokens.unsubscribeUrl('msg_abc123', 'Bo@Example.org');
      const target = tokens.verify('u', tokenOf(url));
      expect(target).toEqual({ kind: 'u', messageId: 'msg_abc123', recipient: expect.stringMatching(/^[\w-]{12}$/) });
      expect(Buffer.from(tokenOf(url).split('.')[0], 'base64url').toString()).not.toMatch(/bo@/i);
      expect(tokens.recipientOf('msg_abc123', target!.recipient!, recipients)).toBe('Bo@Example.org');
      expect(tokens.unsubscribeUrl('msg_abc123', 'bo@example.org')).toBe(url);
      expect(tokens.unsubscribeUrl('msg_abc123', 'ada@example.org')).not.toBe(url);
      expect(tokens.verify('u', tokenOf(tokens.unsubscribeUrl('msg_abc123')))).toEqual({ kind: 'u', messageId: 'msg_abc123' });
    });

    it('name nobody of another message, nor an address the message did not go to', () => {
      const tag = tokens.verify('u', tokenOf(tokens.unsubscribeUrl('msg_abc123', 'ada@example.org')))!.recipient!;
      expect(tokens.recipientOf('msg_other', tag, recipients)).toBeNull();
      expect(tokens.recipientOf('msg_abc123', tag, ['bo@example.org', 'cy@example.org'])).toBeNull();
    });

    it('refuse a tag of the wrong shape, and a tag on another kind of link', () => {
      const sign = (text: string) => {
        const body = Buffer.from(text).toString('base64url');
        return `${body}.${tokenOf(tokens.openUrl('msg_abc123')).split('.')[1]}`;
      };
      expect(tokens.verify('u', sign('u:msg_abc123:short'))).toBeNull();
      const tagged = tokenOf(tokens.unsubscribeUrl('msg_abc123', 'ada@example.org'));
      expect(tokens.verify('o', tagged)).toBeNull();
      expect(tokens.verify('c', tagged)).toBeNull();
    });

    it('keep naming their recipient after a key rotation', () => {
      const rotated = new TrackingTokens(config('b', 'a'));
      const old = rotated.verify('u', tokenOf(tokens.unsubscribeUrl('msg_abc123', 'cy@example.org')));
      expect(rotated.recipientOf('msg_abc123', old!.recipient!, recipients)).toBe('cy@example.org');
      expect(new TrackingTokens(config('b')).recipientOf('msg_abc123', old!.recipient!, recipients)).toBeNull();
    });
  });
});
