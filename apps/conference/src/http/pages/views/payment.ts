/** The simulated third-party payment processor (the Journey's Payments area): accept or reject a payment. */
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';

export interface PaymentRequest {
  readonly itemName: string;
  readonly itemAmount: string;
  /** Where accepting goes, and where rejecting goes: paths on this site. */
  readonly returnUrl: string;
  readonly cancelReturnUrl: string;
}

export function paymentProcessorPage(request: PaymentRequest): SafeHtml {
  const body = html`<h1>Simulated Third-party Payment Clearing Processor</h1>
<dl><dt>Item:</dt><dd id="item-name">${request.itemName}</dd><dt>Amount:</dt><dd id="item-amount">${request.itemAmount}</dd></dl>
<form method="post" action="/payment">
<input type="hidden" name="returnUrl" value="${request.returnUrl}">
<input type="hidden" name="cancelReturnUrl" value="${request.cancelReturnUrl}">
<button type="submit" name="outcome" value="accepted">Accept</button>
<button type="submit" name="outcome" value="rejected" class="danger">Reject</button>
</form>`;
  return page({ site: 'public', title: 'Payment', body });
}
