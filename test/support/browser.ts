import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, chromium, Locator, Page } from 'playwright-core';

/** Where screenshots of browser tests go (ignored by git). */
export const ARTIFACTS_DIR = join(__dirname, '..', 'artifacts');

/**
 * Debian's chromium, headless (CHROMIUM_PATH overrides the binary); no sandbox, as the tests run as root.
 * extraArgs go on its command line (for example --host-rules).
 */
export function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', ...extraArgs] });
}

/** Saves a screenshot of the full page, or of `element` only, as test/artifacts/<name>.png and returns its path. */
export async function saveScreenshot(page: Page, name: string, element?: Locator): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name.replace(/[^\w.-]+/g, '-')}.png`);
  await (element ? element.screenshot({ path }) : page.screenshot({ path, fullPage: true }));
  return path;
}
