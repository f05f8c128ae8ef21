// Linking the signed-in phone to an account that already exists: a phone no account knew
// signs in to a new, empty account; its owner pastes one of the existing account's API keys
// once, and from then on the phone signs in to that account (POST /portal/api/account/link).
// The key goes only into that request's body; the page keeps no copy.

import { api, h, say, setCsrf } from './ui.js';

/** The "Already have an API key?" form an empty account's pages show. */
export function linkPanel(session) {
  const input = h('input', {
    id: 'link-key', name: 'apiKey', type: 'password', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'sb_live_…', required: true, 'aria-describedby': 'link-key-error',
  });
  const error = h('p', { id: 'link-key-error', class: 'field-error error', role: 'alert' });
  const button = h('button', { type: 'submit', id: 'link-button' }, 'Link this phone to that account');
  return h('form', {
    id: 'link-account',
    class: 'notice',
    async onsubmit(event) {
      event.preventDefault();
      error.textContent = '';
      input.removeAttribute('aria-invalid');
      button.disabled = true;
      try {
        const linked = await api('/account/link', { method: 'POST', body: { apiKey: input.value.trim() } });
        input.value = '';
        setCsrf(linked.csrfToken);
        say(linked.linked
          ? `${session.phone} now signs in to ${linked.developerId}.`
          : `${session.phone} already signs in to ${linked.developerId}.`);
        // The session was re-issued for the linked account: show that account's pages.
        window.location.reload();
      } catch (err) {
        error.textContent = err.message;
        input.setAttribute('aria-invalid', 'true');
      } finally {
        button.disabled = false;
      }
    },
  },
  h('h2', {}, 'Already have an API key?'),
  h('p', {}, `This account (${session.developerId}) has nothing in it yet. If you already have an account with API keys, `,
    'link this phone to it: paste one of its API keys once, and from then on this phone signs in to that account. ',
    'This works for an account no phone signs in to yet; the key is not stored.'),
  h('label', { for: 'link-key' }, 'API key of your account'), input, error, button);
}
