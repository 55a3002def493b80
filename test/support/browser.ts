import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';

/** Where screenshots of browser tests go (ignored by git). */
export const ARTIFACTS_DIR = join(__dirname, '..', 'artifacts');

/** Debian's chromium, headless (CHROMIUM_PATH overrides the binary); no sandbox, as the tests run as root. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}

/** Saves a full-page screenshot as test/artifacts/<name>.png and returns its path. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name.replace(/[^\w.-]+/g, '-')}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
