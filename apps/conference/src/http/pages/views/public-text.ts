import { MAX_SEATS_PER_TYPE } from '../../../domain/contracts.js';

/** The messages the Journey shows; tests and the browser test look for them. */
export const PUBLIC_TEXT = {
  invalidConference: 'Invalid conference code.',
  soldOut: 'Sold out',
  partiallyFulfilled:
    'Could not reserve all the requested seats. The seat quantity is set to the available seats.',
  itemsRequired: 'One or more items are required.',
  seatTypeGone: 'A seat type you chose is no longer offered.',
  badQuantity: `Choose from 0 to ${MAX_SEATS_PER_TYPE} seats of each type.`,
  orderUnknown: 'Cannot determine the state of the registration',
  reservationUnknown: 'Cannot determine the state of the seat reservation',
  paymentUnknown: 'Cannot determine the state of the payment',
  completed: 'Your order has been completed',
  expired: 'Your order has expired',
  released: 'The seats reserved for it have been released.',
  emailsDiffer: 'E-Mail addresses do not match.',
  confirmEmail: 'Please confirm the e-mail address.',
  paymentRejected: 'The payment was not accepted. You can try again.',
  orderNotFound: 'Could not find a registration with this e-mail address and order code.',
  noSuchOrder:
    'The order could not be found. To see an order of yours, find it with your e-mail address and order code.',
  notOpen: 'This conference is not open for registration.',
} as const;
