// Agents and collections: the list, and the agent editor (create, edit, archive, and "Talk to
// it", which opens the browser voice widget against the agent). The editor writes through the
// /v1 agent handlers mounted under /portal/api, so the API's own validation answers; an
// error naming a field is shown next to that field.
//
// On an edit only the fields that changed are sent. The JSON fields (metadata, transfer,
// analysis, style profile) are sent back as they were read when they changed at all: a tool's
// secret or header values read as {"hint": …} objects, and sending such an object back keeps
// the stored value, so an unrelated edit never loses a secret.

import { all, api, confirmButton, h, say, show, table, when } from './ui.js';
import { linkPanel } from './account.js';

export async function agentsView(session) {
  const [agents, collections] = await Promise.all([all('/agents'), all('/collections')]);
  const empty = agents.length === 0 && collections.length === 0;
  show('Agents & collections',
    h('h2', {}, 'Agents'),
    h('p', {}, h('a', { href: '/portal/agents/new', id: 'new-agent', class: 'button' }, 'New agent')),
    agents.length === 0 ? h('p', {}, 'No agents yet: create one here, or through POST /v1/agents.') : table(
      ['Id', 'Name', 'Voice', 'Language model', 'Collection', 'Updated', ''],
      agents.map((a) => h('tr', { 'data-agent-id': a.id },
        h('td', {}, h('code', {}, a.id)), h('td', {}, a.name), h('td', {}, `${a.ttsProvider} / ${a.voiceId}`),
        h('td', {}, `${a.llmProvider}${a.llmModel ? ` / ${a.llmModel}` : ''}`), h('td', {}, a.collectionId ?? '—'),
        h('td', {}, when(a.updatedAt)),
        h('td', {},
          h('a', { href: `/portal/agents/${encodeURIComponent(a.id)}`, class: 'edit-agent' }, 'Edit'), ' · ',
          h('a', { href: `/portal/sessions?agentId=${encodeURIComponent(a.id)}` }, 'Sessions')))),
      { id: 'agents-table' }),
    h('h2', {}, 'Collections'),
    collections.length === 0 ? h('p', {}, 'No knowledge collections.') : table(
      ['Id', 'Name', 'Description', 'Created'],
      collections.map((c) => h('tr', { 'data-collection-id': c.id },
        h('td', {}, h('code', {}, c.id)), h('td', {}, c.name), h('td', {}, c.description ?? ''), h('td', {}, when(c.createdAt)))),
      { id: 'collections-table' }),
    empty ? linkPanel(session) : null);
}

/** Text fields: [API name, label, element, attributes]. */
const TEXT_FIELDS = [
  ['name', 'Name', 'input', { maxlength: 100, required: true }],
  ['description', 'Description', 'textarea', { maxlength: 1000, rows: 2 }],
  ['systemPrompt', 'System prompt', 'textarea', { maxlength: 10000, rows: 6 }],
  ['firstMessage', 'First message (spoken when a session starts)', 'textarea', { maxlength: 1000, rows: 2 }],
  ['language', 'Language (en, pt-BR, … or auto)', 'input', { maxlength: 20 }],
];

/** JSON fields: [API name, label, what an empty box means]. */
const JSON_FIELDS = [
  ['metadata', 'Metadata (tools, fallbacks, turnTaking, …)', {}],
  ['transfer', 'Transfer targets', []],
  ['analysis', 'Post-call analysis', null],
  ['styleProfile', 'Voice style profile', null],
];

const pretty = (value) => (value === null || value === undefined ? '' : JSON.stringify(value, null, 2));

/** Providers of one kind from the catalog, the agent's current one included. */
function providerOptions(catalog, kind, current) {
  const ids = (catalog.providers?.[kind] ?? []).filter((p) => p.adapter).map((p) => p.id);
  if (current && !ids.includes(current)) ids.push(current);
  if (!ids.includes('default')) ids.unshift('default');
  return ids;
}

export async function agentEditorView(agentId) {
  const creating = agentId === null;
  const [agent, collections, catalog] = await Promise.all([
    creating ? Promise.resolve(null) : api(`/agents/${encodeURIComponent(agentId)}`),
    all('/collections'),
    api('/audio/models'),
  ]);
  const fields = new Map();
  const errors = new Map();
  const initial = new Map();

  function field(name, label, control, hint) {
    control.id = `agent-${name}`;
    control.name = name;
    const error = h('p', { class: 'field-error error', id: `agent-${name}-error`, 'data-field': name });
    control.setAttribute('aria-describedby', error.id);
    fields.set(name, control);
    errors.set(name, error);
    return h('div', { class: 'field', 'data-field': name },
      h('label', { for: control.id }, label), control, hint ? h('p', { class: 'hint' }, hint) : null, error);
  }

  const sections = [];
  if (creating) {
    sections.push(field('id', 'Id (optional: letters, digits, _ or -)', h('input', { maxlength: 60, pattern: '[A-Za-z0-9_-]+' })));
  }
  for (const [name, label, tag, attrs] of TEXT_FIELDS) {
    const control = h(tag, attrs);
    control.value = agent?.[name] ?? (name === 'language' ? 'en' : '');
    sections.push(field(name, label, control));
  }

  const select = (options, current) => {
    const el = h('select', {}, options.map(([value, text]) => h('option', { value }, text)));
    el.value = current;
    return el;
  };
  const voices = [...new Set(catalog.data.filter((m) => m.kind === 'speech').flatMap((m) => m.voices ?? []))];
  const voiceList = h('datalist', { id: 'agent-voices' }, ['default', ...voices].map((v) => h('option', { value: v })));
  const voice = h('input', { list: 'agent-voices', maxlength: 200 });
  voice.value = agent?.voiceId ?? 'default';
  sections.push(h('fieldset', {}, h('legend', {}, 'Voice and models'),
    field('ttsProvider', 'Speech provider', select(
      providerOptions(catalog, 'tts', agent?.ttsProvider).map((id) => [id, id === 'default' ? 'default (embedded)' : id]),
      agent?.ttsProvider ?? 'default')),
    field('voiceId', 'Voice', voice, 'The embedded voices are listed; a vendor takes its own voice ids.'), voiceList,
    field('ttsModel', 'Speech model (optional)', Object.assign(h('input', { maxlength: 200 }), { value: agent?.ttsModel ?? '' })),
    field('sttProvider', 'Transcription provider', select(
      providerOptions(catalog, 'stt', agent?.sttProvider).map((id) => [id, id === 'default' ? 'default (embedded)' : id]),
      agent?.sttProvider ?? 'default')),
    field('llmProvider', 'Language-model provider', select(
      providerOptions(catalog, 'llm', agent?.llmProvider).map((id) => [id, id === 'default' ? 'default (embedded)' : id]),
      agent?.llmProvider ?? 'default')),
    field('llmModel', 'Language model (optional)', Object.assign(h('input', { maxlength: 200 }), { value: agent?.llmModel ?? '' })),
    field('temperature', 'Temperature (0-2)', Object.assign(h('input', { type: 'number', min: 0, max: 2, step: 0.1 }),
      { value: String(agent?.temperature ?? 0.7) })),
    field('maxTokens', 'Max tokens per reply (1-16384, optional)', Object.assign(h('input', { type: 'number', min: 1, max: 16384, step: 1 }),
      { value: agent?.maxTokens == null ? '' : String(agent.maxTokens) }))));

  const collection = select([['', 'None'], ...collections.map((c) => [c.id, `${c.name} (${c.id})`])], agent?.collectionId ?? '');
  sections.push(field('collectionId', 'Knowledge collection', collection));

  const advanced = [];
  for (const [name, label] of JSON_FIELDS) {
    const control = h('textarea', { rows: name === 'metadata' ? 8 : 4, spellcheck: 'false', class: 'json' });
    control.value = pretty(agent?.[name]);
    advanced.push(field(name, `${label} (JSON)`, control));
  }
  sections.push(h('fieldset', {}, h('legend', {}, 'Advanced'),
    h('p', { class: 'hint' }, 'Secret values of tools read as {"hint": …}; leave them so to keep the stored value.'),
    ...advanced));

  for (const [name, control] of fields) initial.set(name, control.value);

  function clearErrors() {
    for (const [name, error] of errors) {
      error.textContent = '';
      fields.get(name).removeAttribute('aria-invalid');
    }
    formError.textContent = '';
  }

  /** Shows an API error next to the field it names (`metadata.tools[0].url` → metadata). */
  function showError(err) {
    const root = err.param ? err.param.split(/[.[]/)[0] : null;
    const error = root ? errors.get(root) : null;
    if (error) {
      error.textContent = err.message;
      fields.get(root).setAttribute('aria-invalid', 'true');
      fields.get(root).focus();
    } else {
      formError.textContent = err.message;
    }
  }

  /** The request body: every field on create, the changed ones on an edit. */
  function body() {
    const out = {};
    for (const [name, control] of fields) {
      if (!creating && control.value === initial.get(name)) continue;
      const raw = control.value;
      const spec = JSON_FIELDS.find(([n]) => n === name);
      if (spec) {
        if (raw.trim() === '') {
          if (!creating) out[name] = spec[2];
          continue;
        }
        try {
          out[name] = JSON.parse(raw);
        } catch (parseError) {
          throw Object.assign(new Error(`${name} is not valid JSON: ${parseError.message}`), { param: name });
        }
      } else if (name === 'temperature' || name === 'maxTokens') {
        if (raw.trim() === '') {
          if (!creating) out[name] = null;
          continue;
        }
        out[name] = Number(raw);
      } else if (raw.trim() === '' && !['name', 'voiceId', 'language'].includes(name)) {
        if (!creating) out[name] = null;
      } else {
        out[name] = raw;
      }
    }
    return out;
  }

  const formError = h('p', { id: 'agent-form-error', class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit', id: 'save-agent' }, creating ? 'Create agent' : 'Save changes');
  const form = h('form', {
    id: 'agent-form',
    novalidate: true,
    async onsubmit(event) {
      event.preventDefault();
      clearErrors();
      let payload;
      try {
        payload = body();
      } catch (err) {
        showError(err);
        return;
      }
      if (!creating && Object.keys(payload).length === 0) {
        say('Nothing changed.');
        return;
      }
      save.disabled = true;
      try {
        const saved = creating
          ? await api('/agents', { method: 'POST', body: payload })
          : await api(`/agents/${encodeURIComponent(agentId)}`, { method: 'PUT', body: payload });
        if (creating) {
          window.location.assign(`/portal/agents/${encodeURIComponent(saved.id)}?created=1`);
          return;
        }
        await agentEditorView(saved.id);
        say(`Saved ${saved.name}.`);
      } catch (err) {
        showError(err);
      } finally {
        save.disabled = false;
      }
    },
  }, formError, ...sections, save);

  const actions = [];
  if (!creating) {
    actions.push(h('button', { type: 'button', id: 'talk', onclick: () => talk(agent) }, 'Talk to it'), ' ',
      confirmButton('Archive', 'Really archive?', async () => {
        try {
          await api(`/agents/${encodeURIComponent(agentId)}`, { method: 'DELETE' });
          window.location.assign('/portal/agents');
        } catch (err) {
          say(err.message);
        }
      }));
  }
  const heading = creating ? 'New agent' : `Agent ${agent.name}`;
  show(heading,
    creating ? null : h('p', {}, h('code', { id: 'agent-id' }, agent.id), ` · updated ${when(agent.updatedAt)}`),
    actions.length ? h('p', { class: 'actions' }, ...actions) : null,
    h('div', { id: 'talk-slot' }),
    form);
  if (new URLSearchParams(window.location.search).get('created')) say(`Created ${agent.name}.`);
}

/**
 * Opens the voice widget against the agent: its session token is minted through the portal
 * session (POST /portal/api/agents/{id}/session-token), never with an API key.
 */
async function talk(agent) {
  const slot = document.getElementById('talk-slot');
  let voice = slot.querySelector('switchboard-voice');
  if (!voice) {
    await import('/widget/widget.js');
    voice = document.createElement('switchboard-voice');
    voice.setAttribute('agent-id', agent.id);
    voice.setAttribute('label', agent.name);
    voice.setAttribute('diagnostics', '');
    voice.getToken = async () => {
      const minted = await api(`/agents/${encodeURIComponent(agent.id)}/session-token`, { method: 'POST' });
      return minted.token;
    };
    voice.addEventListener('switchboard:error', (event) => say(event.detail.message));
    slot.replaceChildren(h('section', { class: 'talk', id: 'talk-panel' }, voice));
  }
  voice.start().catch((err) => say(err.message));
}
