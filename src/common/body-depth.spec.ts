import { jsonNestsDeeperThan, MAX_BODY_DEPTH, verifyJsonBody } from './body-depth';

const nested = (levels: number) => '{"a":'.repeat(levels - 1) + '[1]' + '}'.repeat(levels - 1);
const deeper = (text: string, max: number) => jsonNestsDeeperThan(Buffer.from(text), max);

describe('body depth', () => {
  it('counts object and array levels, the top one included', () => {
    expect(deeper('{"a":1}', 1)).toBe(false);
    expect(deeper('{"a":[1]}', 1)).toBe(true);
    expect(deeper(nested(32), 32)).toBe(false);
    expect(deeper(nested(33), 32)).toBe(true);
    expect(deeper('[[],[],[[]]]', 3)).toBe(false);
    expect(deeper('[[],[],[[]]]', 2)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(deeper(JSON.stringify({ a: '[[[[{{{{', b: 'say \\"[[[[\\" or "{{{{"', c: '\\' }), 1)).toBe(false);
    expect(deeper(JSON.stringify({ a: 'ü€😀[[[' }), 1)).toBe(false);
    expect(deeper('{"a":"\\\\"}', 1)).toBe(false); // the backslash is escaped, the quote closes the string
  });

  it('scans a large body quickly', () => {
    const body = Buffer.from(JSON.stringify({ content: 'A'.repeat(30 * 1024 * 1024), items: Array(1000).fill({ a: [1] }) }));
    const started = Date.now();
    expect(jsonNestsDeeperThan(body, MAX_BODY_DEPTH)).toBe(false);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('refuses deep and non-UTF-8 JSON with the status body-parser passes on', () => {
    expect(() => verifyJsonBody({} as never, {}, Buffer.from(nested(33)), 'utf-8')).toThrow(
      expect.objectContaining({ status: 400, type: 'entity.too.deep' }),
    );
    expect(() => verifyJsonBody({} as never, {}, Buffer.from('{}'), 'utf-16')).toThrow(
      expect.objectContaining({ status: 415, type: 'charset.unsupported' }),
    );
    expect(() => verifyJsonBody({} as never, {}, Buffer.from(nested(32)), 'utf-8')).not.toThrow();
  });
});
