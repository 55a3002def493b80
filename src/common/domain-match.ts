/**
 * True when `host` is one of `domains` or under one (`www.example.com` under `example.com`), case-insensitively; a
 * root dot on `host` is ignored. DMARC's relaxed alignment is this test against the organizational domain.
 */
export function hostMatchesDomain(host: string, domains: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return domains.some((domain) => {
    const d = domain.toLowerCase();
    return h === d || h.endsWith(`.${d}`);
  });
}
