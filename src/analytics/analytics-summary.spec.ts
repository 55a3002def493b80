import { DayCounts, dailySeries, emailSummary, NO_EMAIL, sumDays } from './analytics-summary';
import { ZERO_DAY, ZERO_EMAIL } from '../../test/support/analytics-zeros';

describe('emailSummary', () => {
  it('maps the counts and computes the rates over emails_sent', () => {
    const summary = emailSummary({
      sent: 6,
      delivered: 5,
      bounced: 1,
      complained: 1,
      unsubscribed: 2,
      opened: 7,
      openedUnique: 3,
      openedMachine: 4,
      clicked: 2,
      clickedUnique: 1,
      clickedMachine: 9,
    });
    expect(summary).toEqual({
      emails_sent: 6,
      delivered: 5,
      bounced: 1,
      complaints: 1,
      opens: 7,
      clicks: 2,
      unsubscribes: 2,
      delivery_rate: 83.33,
      open_rate: 50,
      click_rate: 16.67,
      unique_opens: 3,
      machine_opens: 4,
      unique_clicks: 1,
      machine_clicks: 9,
    });
  });

  it('is all zeros, rates included, with nothing sent (even if opens were recorded)', () => {
    expect(emailSummary(NO_EMAIL)).toEqual(ZERO_EMAIL);
    const rates = emailSummary({ ...NO_EMAIL, delivered: 2, openedUnique: 1, clickedUnique: 1 });
    expect([rates.delivery_rate, rates.open_rate, rates.click_rate]).toEqual([0, 0, 0]);
  });
});

describe('dailySeries', () => {
  const window = { name: 'custom' as const, from: new Date('2026-11-20T00:00:00Z'), to: new Date('2026-11-23T05:00:00Z') };

  it('has every date of the window, zeros where nothing happened', () => {
    const series = dailySeries(window, [
      {
        ...NO_EMAIL,
        date: '2026-11-21',
        sent: 4,
        delivered: 3,
        bounced: 1,
        unsubscribed: 1,
        opened: 2,
        openedUnique: 1,
        clicked: 1,
        submissions: 5,
        spam: 2,
        forwarded: 3,
      },
    ]);
    expect(series).toEqual([
      { date: '2026-11-20', ...ZERO_DAY },
      {
        date: '2026-11-21',
        emails_sent: 4,
        delivered: 3,
        bounced: 1,
        complaints: 0,
        opens: 2,
        clicks: 1,
        unsubscribes: 1,
        submissions: 5,
        spam_blocked: 2,
        forwarded: 3,
      },
      { date: '2026-11-22', ...ZERO_DAY },
      { date: '2026-11-23', ...ZERO_DAY },
    ]);
  });

  it('ignores rows outside the window', () => {
    const series = dailySeries(window, [{ ...NO_EMAIL, date: '2026-11-19', sent: 1, submissions: 0, spam: 0, forwarded: 1 }]);
    expect(series.map((d) => [d.emails_sent, d.forwarded])).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });
});

describe('sumDays', () => {
  it('adds every email count of the days, unique and machine ones included', () => {
    const day = (date: string, n: number): DayCounts => ({
      date,
      sent: n,
      delivered: 2 * n,
      bounced: 3 * n,
      complained: 4 * n,
      unsubscribed: 5 * n,
      opened: 6 * n,
      openedUnique: 7 * n,
      openedMachine: 8 * n,
      clicked: 9 * n,
      clickedUnique: 10 * n,
      clickedMachine: 11 * n,
      submissions: 100,
      spam: 100,
      forwarded: 100,
    });
    expect(sumDays([day('2026-11-20', 1), day('2026-11-21', 10)])).toEqual({
      sent: 11,
      delivered: 22,
      bounced: 33,
      complained: 44,
      unsubscribed: 55,
      opened: 66,
      openedUnique: 77,
      openedMachine: 88,
      clicked: 99,
      clickedUnique: 110,
      clickedMachine: 121,
    });
    expect(sumDays([])).toEqual(NO_EMAIL);
  });
});
