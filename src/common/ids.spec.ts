import { newId } from './ids';

describe('newId', () => {
  it('makes prefixed base62 ids, all different across many refills of its random pool', () => {
    const ids = Array.from({ length: 5000 }, () => newId('msg'));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9A-Za-z]{22}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
