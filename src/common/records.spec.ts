import { Liquid } from 'liquidjs';
import { mergeUserKeyed, ownValue, userKeyed, userKeyedFrom } from './records';

describe('user-keyed records', () => {
  it('store constructor, toString and __proto__ as ordinary keys', () => {
    const record = userKeyed<string>();
    record['constructor'] = 'x';
    record['toString'] = 'y';
    record['__proto__'] = 'z';
    expect(Object.keys(record)).toEqual(['constructor', 'toString', '__proto__']);
    expect(JSON.parse(JSON.stringify(record))).toEqual(JSON.parse('{"constructor":"x","toString":"y","__proto__":"z"}'));
  });

  it('hold nothing before a key is stored', () => {
    const record = userKeyed<string>();
    expect(record['constructor']).toBeUndefined();
    expect('toString' in record).toBe(false);
  });

  it('are built from entries in order, a later entry of a name winning', () => {
    const record = userKeyedFrom([
      ['__proto__', 'a'],
      ['name', 'Ann'],
      ['__proto__', 'b'],
    ]);
    expect(Object.entries(record)).toEqual([
      ['__proto__', 'b'],
      ['name', 'Ann'],
    ]);
    expect(Object.getPrototypeOf(record)).toBeNull();
  });

  it('merge own keys left to right', () => {
    const parsed = JSON.parse('{"__proto__":"own","name":"Ann"}') as Record<string, unknown>;
    const merged = mergeUserKeyed<unknown>({ name: 'shared', plan: 'Pro' }, null, parsed);
    expect(Object.entries(merged)).toEqual([
      ['name', 'Ann'],
      ['plan', 'Pro'],
      ['__proto__', 'own'],
    ]);
    expect(Object.getPrototypeOf(merged)).toBeNull();
  });

  it('print as a plain object does, in Liquid too, without a key of their own for it', async () => {
    const form = userKeyedFrom([
      ['name', 'Ann'],
      ['toString', 'x'],
    ]);
    // What Handlebars does to a value it prints: `'' + value`.
    const printed: unknown = mergeUserKeyed(form);
    expect(String(printed)).toBe('[object Object]');
    expect('' + (printed as string)).toBe('[object Object]');
    await expect(new Liquid().parseAndRender('{{ form }} {{ form.name }} {{ form.toString }}', { form })).resolves.toBe(
      '[object Object] Ann x',
    );
    expect(Object.keys(form)).toEqual(['name', 'toString']);
    expect(JSON.stringify({ ...form })).toBe('{"name":"Ann","toString":"x"}');
  });

  it('read only what a record holds itself', () => {
    const plain: Record<string, string> = { name: 'Ann' };
    expect(ownValue(plain, 'constructor')).toBeUndefined();
    expect(ownValue(plain, 'toString')).toBeUndefined();
    expect(ownValue(plain, 'name')).toBe('Ann');
    expect(ownValue(undefined, 'name')).toBeUndefined();
  });
});
