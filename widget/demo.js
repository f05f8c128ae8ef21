// The demo page (/widget/demo?agentId=…): a developer pastes an API key, picks one of their
// agents and talks to it through the widget. The key lives only in this module's memory and
// in the password field: it is never put in a URL, in storage or in the console, and it goes
// only to this server, in the Authorization header. Each conversation gets its own session
// token minted with it.

import './widget.js';

const $ = (id) => document.getElementById(id);
const keyInput = $('key');
const agentSelect = $('agent');
const status = $('setup-status');
const voice = $('voice');

/** The agent in the page's address, if any (only the agent id is ever put there). */
const requestedAgent = new URLSearchParams(location.search).get('agentId') ?? '';

function say(message, isError = false) {
  status.textContent = message;
  status.classList.toggle('error', isError);
}

function currentKey() {
  return keyInput.value.trim();
}

/** An API call with the pasted key; a documented error body becomes the thrown message. */
async function api(method, path) {
  const key = currentKey();
  if (key === '') throw new Error('Paste an API key first.');
  const response = await fetch(new URL(path, location.origin), {
    method,
    headers: { Authorization: `Bearer ${key}`, Accept: 'application/json' },
    cache: 'no-store',
    credentials: 'omit',
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const detail = body?.error?.message ?? `HTTP ${response.status}`;
    throw new Error(response.status === 401 ? `The key was refused: ${detail}` : detail);
  }
  return body;
}

/** Every agent of the key's developer, following the list's cursors. */
async function listAgents() {
  const agents = [];
  let cursor = null;
  for (let page = 0; page < 50; page++) {
    const query = new URLSearchParams({ limit: '100' });
    if (cursor) query.set('cursor', cursor);
    const body = await api('GET', `/v1/agents?${query}`);
    agents.push(...body.data);
    if (!body.hasMore || !body.nextCursor) break;
    cursor = body.nextCursor;
  }
  return agents;
}

/** Agent names by id, from the last load. */
const names = new Map();

function chooseAgent(id) {
  if (id === '') {
    voice.removeAttribute('agent-id');
  } else {
    voice.setAttribute('agent-id', id);
  }
  voice.setAttribute('label', names.get(id) ?? 'Agent');
  const url = new URL(location.href);
  if (id === '') url.searchParams.delete('agentId');
  else url.searchParams.set('agentId', id);
  history.replaceState(null, '', url);
}

async function loadAgents() {
  say('Loading your agents…');
  agentSelect.disabled = true;
  try {
    const agents = await listAgents();
    const wanted = agentSelect.value || voice.getAttribute('agent-id') || requestedAgent;
    agentSelect.replaceChildren();
    if (agents.length === 0) {
      agentSelect.append(new Option('No agents yet: create one with POST /v1/agents', ''));
      chooseAgent('');
      say('This key has no agents.', true);
      return;
    }
    names.clear();
    for (const agent of agents) {
      names.set(agent.id, agent.name);
      agentSelect.append(new Option(`${agent.name} (${agent.id})`, agent.id));
    }
    const found = agents.some((agent) => agent.id === wanted);
    agentSelect.value = found ? wanted : agents[0].id;
    agentSelect.disabled = false;
    chooseAgent(agentSelect.value);
    say(
      wanted && !found
        ? `No agent '${wanted}' for this key; picked ${agentSelect.value}.`
        : `${agents.length} agent${agents.length === 1 ? '' : 's'} loaded.`,
      Boolean(wanted && !found),
    );
  } catch (error) {
    agentSelect.replaceChildren(new Option('Load your agents first', ''));
    say(error.message, true);
  }
}

if (requestedAgent !== '') voice.setAttribute('agent-id', requestedAgent);

// Each start mints a fresh token: a token opens one session and lives 10 minutes. Only the
// token is used: the socket goes to this page's own origin, which its policy allows.
voice.getToken = async () => {
  const agentId = voice.getAttribute('agent-id');
  if (!agentId) throw new Error('Pick an agent first.');
  const minted = await api('POST', `/v1/agents/${encodeURIComponent(agentId)}/session-token`);
  return minted.token;
};

$('load').addEventListener('click', loadAgents);
keyInput.addEventListener('keydown', (event) => {
  if (event.key === 'Enter') {
    event.preventDefault();
    loadAgents();
  }
});
$('forget').addEventListener('click', () => {
  keyInput.value = '';
  agentSelect.replaceChildren(new Option('Load your agents first', ''));
  agentSelect.disabled = true;
  say('The key is forgotten.');
});
agentSelect.addEventListener('change', () => chooseAgent(agentSelect.value));

voice.addEventListener('switchboard:error', (event) => say(event.detail.message, true));
voice.addEventListener('switchboard:state', (event) => {
  if (event.detail.state === 'listening') say('Connected: speak, or type below.');
  if (event.detail.state === 'ended') say('The conversation ended.');
});

// The counters a developer (or a test) watches while talking.
setInterval(() => {
  const stats = voice.stats;
  if (!stats) return;
  $('played').textContent = `${(stats.agentSamplesPlayed / (voice.session?.options.sampleRate ?? 16000)).toFixed(1)} s`;
  $('played').dataset.samples = String(stats.agentSamplesPlayed);
  $('sent').textContent = String(stats.callerFramesSent);
  $('underruns').textContent = String(stats.underruns);
  $('clears').textContent = String(stats.clears);
}, 250);
