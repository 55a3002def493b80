import type { DataSource } from 'typeorm';
import type { Form } from '../form.entity';
import { CONCURRENT_RELEASE_PAGES, HeldSubmissionReleases } from './held-submission-releases';

describe('HeldSubmissionReleases', () => {
  it('runs at most CONCURRENT_RELEASE_PAGES page transactions at once; the other pages wait for one to end', async () => {
    const open: (() => void)[] = [];
    // Each page's transaction stays open (holding its pooled connection) until the test ends it; it claims nothing.
    const dataSource = {
      transaction: () => new Promise((resolve) => open.push(() => resolve({ claimed: 0, count: 0, messages: [], refusal: null }))),
    } as unknown as DataSource;
    const none = {} as never;
    const releases = new HeldSubmissionReleases(dataSource, none, none, none, none, none, none, none);
    const forms = Array.from({ length: CONCURRENT_RELEASE_PAGES + 2 }, (_, i) => ({ id: `frm_${i}`, accountId: 'acc_1' }) as Form);
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    const pages = forms.map((form) => releases.releasePage(form));
    await turn();
    expect(open).toHaveLength(CONCURRENT_RELEASE_PAGES);

    open[0]();
    await turn();
    expect(open).toHaveLength(CONCURRENT_RELEASE_PAGES + 1);

    for (let i = 1; i < forms.length; i++) {
      open[i]();
      await turn();
    }
    expect(await Promise.all(pages)).toEqual(forms.map(() => ({ claimed: 0, released: 0, refusal: null })));
  });
});
