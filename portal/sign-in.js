// Sign-in: ask for a code for a phone number, then present it with the challenge id the
// request answered (the code works only with it). The server sets the session cookie
// (HttpOnly) on success; this script never sees it.

const $ = (id) => document.getElementById(id);
const status = $('status');
let phone = '';
let challengeId = '';

async function post(path, body) {
  const response = await fetch(`/portal/api/sign-in/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = data.error?.message ?? `the server answered ${response.status}`;
    throw new Error(message);
  }
  return data;
}

function busy(button, on) {
  button.disabled = on;
  button.setAttribute('aria-busy', String(on));
}

$('phone-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = $('send-code');
  busy(button, true);
  status.textContent = 'Sending…';
  try {
    const sent = await post('code', { phone: $('phone').value });
    phone = sent.phone;
    challengeId = sent.challengeId;
    const until = new Date(sent.expiresAt).toLocaleTimeString();
    $('code-sent').textContent = sent.channel === 'sms'
      ? `We sent a code to ${phone}. It works until ${until}.`
      : `No SMS sender is configured on this server: the code for ${phone} is in the server log. It works until ${until}.`;
    $('phone-form').hidden = true;
    $('code-form').hidden = false;
    status.textContent = '';
    $('code').focus();
  } catch (err) {
    status.textContent = err.message;
  } finally {
    busy(button, false);
  }
});

$('code-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = $('verify-code');
  busy(button, true);
  status.textContent = 'Checking…';
  try {
    await post('verify', { phone, challengeId, code: $('code').value.trim() });
    status.textContent = 'Signed in.';
    window.location.assign('/portal/keys');
  } catch (err) {
    status.textContent = err.message;
    busy(button, false);
  }
});

$('change-number').addEventListener('click', () => {
  $('code-form').hidden = true;
  $('phone-form').hidden = false;
  $('code').value = '';
  status.textContent = '';
  $('phone').focus();
});
