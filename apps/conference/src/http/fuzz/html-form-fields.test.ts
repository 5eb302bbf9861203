import assert from 'node:assert/strict';
import { test } from 'node:test';
import { htmlFormFields } from './html-form-fields.js';

test('htmlFormFields reads the names and values of inputs, selects, text areas and buttons', () => {
  const html = `<form method="post">
    <input type="hidden" name="orderId" value="0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f80">
    <input name="email" value="ann&amp;bob@example.com" required>
    <select name="q_01"><option value="0">0</option><option value="1" selected>1</option></select>
    <textarea name="description"></textarea>
    <button name="outcome" value="accepted">Accept</button>
    <button name="outcome" value="rejected">Reject</button>
    <input type="submit">
  </form>`;
  assert.deepEqual(
    [...htmlFormFields(html)].map(([name, values]) => [name, [...values]]),
    [
      ['orderId', ['0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f80']],
      ['email', ['ann&bob@example.com']],
      ['q_01', ['0', '1']],
      ['description', []],
      ['outcome', ['accepted', 'rejected']],
    ],
  );
});
