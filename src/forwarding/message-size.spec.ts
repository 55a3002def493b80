import { declaredSizeRefusal, messageTooBig } from './message-size';

describe('declaredSizeRefusal', () => {
  it('refuses a declared size over the limit with 552 5.3.4', () => {
    const refusal = declaredSizeRefusal({ SIZE: '1001' }, 1000);
    expect(refusal).toMatchObject({ responseCode: 552, message: '5.3.4 Message too big: the limit is 1000 bytes' });
    expect(refusal).toEqual(messageTooBig(1000));
  });

  it('takes a size up to the limit, and a MAIL FROM that declares none', () => {
    expect(declaredSizeRefusal({ SIZE: '1000' }, 1000)).toBeNull();
    expect(declaredSizeRefusal({ SIZE: '0' }, 1000)).toBeNull();
    expect(declaredSizeRefusal({ BODY: '8BITMIME' }, 1000)).toBeNull();
    expect(declaredSizeRefusal(false, 1000)).toBeNull();
  });

  it('compares sizes past 2^53 as larger', () => {
    expect(declaredSizeRefusal({ SIZE: '99999999999999999999' }, 100 * 1024 * 1024)).not.toBeNull();
  });
});
