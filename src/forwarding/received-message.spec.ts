import { headerBounds, headerFields, headerSection, loopOf, MAX_HOPS, rawFields, traceFields } from './received-message';

describe('received message headers', () => {
  const source = Buffer.from(
    'Received: from a.test\r\n\tby b.test; Mon, 1 Jan 2026 00:00:00 +0000\r\nX-Mailroom-Loop: Info@Fwd.test\r\nSubject: hi\r\n\r\nReceived: not a header\r\n',
  );

  it('reads the header section only, folded fields unfolded', () => {
    expect(headerFields(headerSection(source))).toEqual([
      { name: 'Received', value: 'from a.test by b.test; Mon, 1 Jan 2026 00:00:00 +0000' },
      { name: 'X-Mailroom-Loop', value: 'Info@Fwd.test' },
      { name: 'Subject', value: 'hi' },
    ]);
    expect(headerFields(headerSection(Buffer.from('From x@y Mon Jan 1\nSubject: lf only\n\nbody')))).toEqual([
      { name: 'Subject', value: 'lf only' },
    ]);
  });

  it('ends the header section at its first empty line, whatever line ends the fields use, as mail readers do', () => {
    const mixed = Buffer.from('Subject: lf\nContent-Type: text/plain\n\r\nbody\r\n\r\nmore');
    expect(headerBounds(mixed)).toEqual({ end: 37, bodyStart: 39 });
    expect(headerSection(mixed)).toBe('Subject: lf\nContent-Type: text/plain');
    expect(headerBounds(Buffer.from('\r\nbody'))).toEqual({ end: 0, bodyStart: 2 });
    expect(headerBounds(Buffer.from('Subject: no body'))).toEqual({ end: 16, bodyStart: 16 });
  });

  it('reads a field name as mail readers do: white space around it removed, folded or not', () => {
    const section = 'Content-Type : multipart/mixed;\r\n boundary=b\r\nX-Folded\r\n : name\r\nno colon here\r\nSubject:\r\n hi';
    expect(headerFields(section)).toEqual([
      { name: 'Content-Type', value: 'multipart/mixed; boundary=b' },
      { name: 'X-Folded', value: 'name' },
      { name: 'Subject', value: 'hi' },
    ]);
    expect(
      rawFields(section)
        .map((f) => f.raw)
        .join(''),
    ).toBe(section);
  });

  it('finds a loop by a loop field that stands for the same address, case-insensitively, and by the hop count', () => {
    const fields = headerFields(headerSection(source));
    const plain = (address: string) => [address.toLowerCase()];
    expect(loopOf(fields, ['info@fwd.test'], plain)).toBe('already forwarded for info@fwd.test');
    expect(loopOf(fields, ['sales@fwd.test'], plain)).toBeNull();
    const tokens = (address: string) => (address === 'sales@fwd.test' ? ['info@fwd.test'] : ['other']);
    expect(loopOf(fields, ['a@fwd.test', 'sales@fwd.test'], tokens)).toBe('already forwarded for sales@fwd.test');
    const hops = Array.from({ length: MAX_HOPS }, () => ({ name: 'received', value: 'x' }));
    expect(loopOf(hops.slice(1), ['a@b.test'], plain)).toBeNull();
    expect(loopOf(hops, ['a@b.test'], plain)).toBe(`${MAX_HOPS} Received headers: too many hops`);
  });

  it('writes a Received field naming one recipient only, and a loop field per address with its token, each line CRLF-ended', () => {
    const at = new Date(Date.UTC(2026, 10, 23, 9, 5, 7));
    const one = traceFields({
      id: 'inb_1',
      clientAddress: '192.0.2.1',
      helo: 'mail.\r\nX-Evil: 1 origin.test',
      hostname: 'mx.test',
      secure: true,
      recipients: ['info@fwd.test'],
      loopTokens: ['t1'],
      receivedAt: at,
    });
    expect(one).toBe(
      'Received: from mail.X-Evil:1origin.test (unknown [192.0.2.1])\r\n\tby mx.test (Mailroom) with ESMTPS id inb_1\r\n\tfor <info@fwd.test>;\r\n\tMon, 23 Nov 2026 09:05:07 +0000\r\n' +
        'X-Mailroom-Loop: t1\r\n',
    );
    const two = traceFields({
      id: 'inb_2',
      clientAddress: '::1',
      clientHostname: 'c.test',
      helo: '',
      hostname: 'mx.test',
      secure: false,
      recipients: ['a@f.test', 'b@f.test'],
      loopTokens: ['ta', 'tb'],
      receivedAt: at,
    });
    expect(two).not.toContain('for <');
    expect(two).toContain('from unknown (c.test [::1])');
    expect(two).toContain('with ESMTP id inb_2');
    expect(two.endsWith('X-Mailroom-Loop: ta\r\nX-Mailroom-Loop: tb\r\n')).toBe(true);
    expect(two).not.toContain('a@f.test');
  });
});
