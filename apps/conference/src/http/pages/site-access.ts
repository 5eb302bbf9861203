/**
 * Who may see what on the sites, kept in cookies (cookies.ts): an order's pages need its token (order-token.ts) in
 * the cookie `order-<orderId>`, set when the order is placed or found by e-mail and access code; the owner's pages
 * of a conference need an owner session, the cookie `owner` under `/manage/<slug>` holding an owner token
 * (owner-token.ts) signed for the conference's current access code, set by signing in (never a code in a URL).
 */
import type { Clock } from '@stratus/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isOrderToken, orderToken } from '../order-token.js';
import { isForAccessCode, OWNER_TOKEN_TTL_MS, ownerTokenFor, verifyOwnerToken } from '../owner-token.js';
import { cookieOf, setCookie } from './cookies.js';

/** How long a browser keeps an order's token (after that, finding the order by e-mail and code gives it again). */
const ORDER_COOKIE_SECONDS = 30 * 24 * 60 * 60;
const OWNER_COOKIE = 'owner';

interface OwnedConference {
  readonly id: string;
  readonly slug: string;
  readonly accessCode: string;
}

export class SiteAccess {
  readonly #secret: Buffer;
  readonly #clock: Clock;

  constructor(secret: Buffer, clock: Clock) {
    this.#secret = secret;
    this.#clock = clock;
  }

  /** The token of an order (for the registration form of a new order: the id is the server's, not the client's). */
  orderToken(orderId: string): string {
    return orderToken(orderId, this.#secret);
  }

  isOrderToken(orderId: string, token: string | undefined): boolean {
    return isOrderToken(orderId, token, this.#secret);
  }

  /** The token of the order that the request's cookie holds, if any (not checked). */
  orderTokenOf(request: FastifyRequest, orderId: string): string | undefined {
    return cookieOf(request, orderCookie(orderId));
  }

  /** Whether the request carries the order's token. */
  hasOrder(request: FastifyRequest, orderId: string): boolean {
    return this.isOrderToken(orderId, this.orderTokenOf(request, orderId));
  }

  /** Hands the order's token to the browser, for the conference's pages. */
  grantOrder(request: FastifyRequest, reply: FastifyReply, slug: string, orderId: string): void {
    setCookie(request, reply, {
      name: orderCookie(orderId),
      value: this.orderToken(orderId),
      path: `/${slug}`,
      maxAgeSeconds: ORDER_COOKIE_SECONDS,
    });
  }

  /** Whether the request carries a session of the conference's owner, signed for its current access code. */
  isOwner(request: FastifyRequest, conference: Pick<OwnedConference, 'id' | 'accessCode'>): boolean {
    const token = cookieOf(request, OWNER_COOKIE);
    const claims = token === undefined ? undefined : verifyOwnerToken(token, this.#secret, this.#clock.now());
    return (
      claims?.conferenceId === conference.id && isForAccessCode(claims, conference.accessCode, this.#secret)
    );
  }

  /** Starts the owner's session of the conference (its pages only), for its current access code. */
  signIn(request: FastifyRequest, reply: FastifyReply, conference: OwnedConference): void {
    const exp = this.#clock.now() + OWNER_TOKEN_TTL_MS;
    setCookie(request, reply, {
      name: OWNER_COOKIE,
      value: ownerTokenFor(conference.id, conference.accessCode, exp, this.#secret),
      path: `/manage/${conference.slug}`,
      maxAgeSeconds: OWNER_TOKEN_TTL_MS / 1000,
    });
  }

  signOut(request: FastifyRequest, reply: FastifyReply, slug: string): void {
    setCookie(request, reply, { name: OWNER_COOKIE, value: '', path: `/manage/${slug}`, maxAgeSeconds: 0 });
  }
}

function orderCookie(orderId: string): string {
  return `order-${orderId.toLowerCase()}`;
}
