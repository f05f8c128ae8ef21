// The portal's shared pieces: building elements (text from the server is always set as
// text, never as markup), calling /portal/api with the session's CSRF token, lists, and the
// page frame.

export const API = '/portal/api';
const SVG = 'http://www.w3.org/2000/svg';
const view = document.getElementById('view');
const statusLine = document.getElementById('status');
let csrf = '';

/** Sets the CSRF token state-changing calls carry (after sign-in, and after a re-issue). */
export function setCsrf(token) {
  csrf = token;
}

/** An element with attributes (`on…` are listeners) and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAll(el, attrs, children);
  return el;
}

/** An SVG element, as `h`. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAll(el, attrs, children);
  return el;
}

function setAll(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `the server answered ${status}`);
    this.status = status;
    this.code = body?.error?.code;
    this.param = body?.error?.param ?? null;
  }
}

/** Calls the portal's JSON; a lost session leads back to sign-in. */
export async function api(path, { method = 'GET', body } = {}) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  const response = await fetch(API + path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) {
    window.location.assign('/portal/sign-in');
    throw new ApiError(401, null);
  }
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** Every item of a paginated list. */
export async function all(path) {
  const items = [];
  let cursor = null;
  const join = path.includes('?') ? '&' : '?';
  do {
    const page = await api(`${path}${join}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...page.data);
    cursor = page.hasMore ? page.nextCursor : null;
  } while (cursor);
  return items;
}

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
export const credits = (n) => Number(n ?? 0).toLocaleString(undefined, { maximumFractionDigits: 2 });
export const ms = (n) => `${Math.round(n)} ms`;

export function say(message) {
  statusLine.textContent = message;
}

export function show(title, ...content) {
  document.title = `${title} · Switchboard developer portal`;
  view.replaceChildren(h('h1', {}, title), ...content.filter((c) => c !== null && c !== undefined && c !== false));
}

export function table(columns, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows));
}

/** A button that asks once more before it acts (no blocking dialogs). */
export function confirmButton(label, confirmLabel, action) {
  const button = h('button', { type: 'button', class: 'danger' }, label);
  let armed = false;
  button.addEventListener('click', () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      setTimeout(() => { armed = false; button.textContent = label; }, 4000);
      return;
    }
    action();
  });
  return button;
}

