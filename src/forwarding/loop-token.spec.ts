import { headerFields, headerSection, loopOf, traceFields } from './received-message';
import { LoopTokens } from './loop-token';

const current = Buffer.alloc(32, 1);
const previous = Buffer.alloc(32, 2);

describe('LoopTokens', () => {
  it('makes an opaque token of the lower-cased address: 16 base32 characters, naming nothing', () => {
    const tokens = new LoopTokens([current]);
    const token = tokens.tokenOf('SecretAlias@Fwd.test');
    expect(token).toMatch(/^[a-z2-7]{16}$/);
    expect(token).toBe(tokens.tokenOf('secretalias@fwd.test'));
    expect(token).not.toBe(tokens.tokenOf('info@fwd.test'));
    expect(token).not.toBe(new LoopTokens([previous]).tokenOf('secretalias@fwd.test'));
  });

  it('recognises its tokens under the current and previous keys, and the plain address earlier versions wrote', () => {
    const rotated = new LoopTokens([current, previous]);
    const madeBefore = new LoopTokens([previous]).tokenOf('info@fwd.test');
    expect(rotated.marksOf('Info@fwd.test')).toEqual([rotated.tokenOf('info@fwd.test'), madeBefore, 'info@fwd.test']);
  });

  it('a forwarded copy carries no recipient address, and the message is a loop when it comes back for one of them', () => {
    const tokens = new LoopTokens([current]);
    const trace = traceFields({
      id: 'inb_1',
      clientAddress: '192.0.2.1',
      helo: 'origin.test',
      hostname: 'mx.test',
      secure: true,
      recipients: ['info@fwd.test', 'secretalias@fwd.test'],
      loopTokens: ['info@fwd.test', 'secretalias@fwd.test'].map((a) => tokens.tokenOf(a)),
      receivedAt: new Date(),
    });
    expect(trace).not.toMatch(/secretalias|info@/);
    const back = headerFields(headerSection(Buffer.from(`${trace}Subject: hi\r\n\r\nbody`)));
    const marks = (address: string) => tokens.marksOf(address);
    expect(loopOf(back, ['SecretAlias@fwd.test'], marks)).toBe('already forwarded for SecretAlias@fwd.test');
    expect(loopOf(back, ['sales@fwd.test'], marks)).toBeNull();
    // Made under another key (not a previous one of ours): not ours, not a loop.
    expect(loopOf(back, ['info@fwd.test'], (a) => new LoopTokens([previous]).marksOf(a).slice(0, 1))).toBeNull();
  });

  it('refuses an empty key', () => {
    expect(() => new LoopTokens([])).toThrow('empty');
    expect(() => new LoopTokens([Buffer.alloc(0)])).toThrow('empty');
  });
});
