/**
 * The simulated third-party payment processor (the Journey's Payments area): accept or reject a payment. Runs only
 * with PAYMENTS=simulated, and says so.
 */
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';

export interface PaymentRequest {
  readonly paymentId: string;
  readonly itemName: string;
  readonly itemAmount: string;
}

export function paymentProcessorPage(request: PaymentRequest): SafeHtml {
  const body = html`<h1>Simulated Third-party Payment Clearing Processor</h1>
<p class="notice" id="simulated-banner">A simulated processor for demonstrations: no money moves, and the registrant decides. A deployment runs with <code>PAYMENTS=off</code> or a real processor.</p>
<dl><dt>Item:</dt><dd id="item-name">${request.itemName}</dd><dt>Amount:</dt><dd id="item-amount">${request.itemAmount}</dd></dl>
<form method="post" action="/payment">
<input type="hidden" name="paymentId" value="${request.paymentId}">
<button type="submit" name="outcome" value="accepted">Accept</button>
<button type="submit" name="outcome" value="rejected" class="danger">Reject</button>
</form>`;
  return page({ site: 'public', title: 'Payment', body });
}
