import { cutToBudget, renderedCost } from './email-size';

const pointer = (more: number) => `…(${more})`;

describe('renderedCost', () => {
  it('counts UTF-8 bytes in text and escaped bytes in html', () => {
    expect(renderedCost('ab', false)).toBe(2);
    expect(renderedCost('ab', true)).toBe(4);
    expect(renderedCost('"', true)).toBe(1 + 6);
    expect(renderedCost("<&>'", true)).toBe(4 + 4 + 5 + 4 + 5);
    expect(renderedCost('\n', true)).toBe(3 + 4);
    expect(renderedCost('é€😀', false)).toBe(2 + 3 + 4);
    expect(renderedCost('é€😀', true)).toBe(2 * (2 + 3 + 4));
  });
});

describe('cutToBudget', () => {
  it('leaves values within the budget alone', () => {
    expect(cutToBudget(['abc', 'def'], 12, true, pointer)).toEqual(['abc', 'def']);
  });

  it('cuts only the longest values, each to the same share, ending with the pointer', () => {
    const cut = cutToBudget(['short', 'a'.repeat(1000), 'b'.repeat(2000)], 1000, false, pointer);
    expect(cut[0]).toBe('short');
    expect(cut[1]).toMatch(/^a+…\(\d+\)$/);
    expect(cut[2]).toMatch(/^b+…\(\d+\)$/);
    expect(cut[1].indexOf('…')).toBe(cut[2].indexOf('…'));
    expect(cut.reduce((sum, value) => sum + renderedCost(value, false), 0)).toBeLessThanOrEqual(1000);
    expect(cut[1]).toBe(`${'a'.repeat(cut[1].indexOf('…'))}…(${1000 - cut[1].indexOf('…')})`);
  });

  it('measures after escaping, and never keeps half of a surrogate pair', () => {
    const [quotes] = cutToBudget(['"'.repeat(1000)], 700 + renderedCost(pointer(9_999_999), true), true, pointer);
    expect(quotes).toBe(`${'"'.repeat(100)}…(900)`);
    const [emoji] = cutToBudget(['😀'.repeat(100)], 11 + renderedCost(pointer(9_999_999), false), false, pointer);
    expect(emoji).toBe(`😀😀…(196)`);
  });
});
