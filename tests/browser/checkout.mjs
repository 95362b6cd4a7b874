// Drives the hosted checkout page in a real browser (Debian's chromium through playwright-core)
// and prints what the page showed as one JSON line. Used by tests/tests/e2e/browser_checkout.rs.
//
// Usage: node checkout.mjs <hosted-url> <action> [card-number]
//   action "pay":     fills the card form with the card (expiry 12/2034, CVC 123) and submits it
//   action "inspect": only opens the page
// Prints {"status": <HTTP status>, "sessionStatus": ..., "outcome": ..., "hasCardForm": bool,
//         "banner": <text or null>, "total": <text>}.
import { chromium } from 'playwright-core';

const [url, action, card] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
try {
  const page = await browser.newPage();
  let response = await page.goto(url, { waitUntil: 'load' });
  if (action === 'pay') {
    await page.fill('#card-number', card);
    await page.fill('#exp-month', '12');
    await page.fill('#exp-year', '2034');
    await page.fill('#cvc', '123');
    [response] = await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }),
      page.click('#pay-button'),
    ]);
  }
  const main = page.locator('main');
  const banner = page.locator('#banner');
  const result = {
    status: response ? response.status() : null,
    sessionStatus: await main.getAttribute('data-status'),
    outcome: await main.getAttribute('data-outcome'),
    hasCardForm: (await page.locator('#card-number').count()) > 0,
    banner: (await banner.count()) > 0 ? (await banner.textContent()) : null,
    total: (await page.locator('#total').count()) > 0 ? (await page.locator('#total').textContent()) : null,
  };
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}
