// web/activity.js: the "Security activity" section (GET
// /v1/account/activity, a page at a time, newest first): sign-ins and
// refused sign-ins, keys made, reissued or deleted, sign-in methods and
// applications; "Older" pages back with the answer's next_before.
import { $, el, when } from './dom.js';
import { api } from './api.js';
import { section } from './section.js';

const ACTIONS = {
  signin: 'Signed in', 'signin.refused': 'Sign-in refused', 'key.create': 'Key made',
  'key.reissue': 'Key reissued', 'key.delete': 'Key deleted', 'key.budget': 'Key budget set',
  'identity.link': 'Sign-in method linked', 'identity.unlink': 'Sign-in method unlinked',
  'oauth.authorize': 'Application allowed', 'oauth.revoke': 'Application revoked',
  'session.revoke_all': 'Every session ended', 'user.block': 'Account blocked',
  'user.unblock': 'Account unblocked',
};

/** One page of the activity (before: the id to page back from, or null: the newest). */
async function page(before = null) {
  const r = await api('GET', `/v1/account/activity${before ? `?before=${encodeURIComponent(before)}` : ''}`);
  const items = ((r && r.data) || []).map((a) => el('li', { 'data-action': a.action },
    el('strong', { text: ACTIONS[a.action] || a.action }),
    a.target_kind === 'key' && a.target_id ? ` (key ${a.target_id})` : null,
    a.target_kind !== 'key' && a.target_id ? ` (${a.target_id})` : null,
    a.actor === 'admin' ? ' by an administrator' : null, ', ', when(a.time),
    a.address ? ` from ${a.address}` : null));
  if (before) $('activity-list').append(...items);
  else {
    $('activity-body').replaceChildren(el('ul', { id: 'activity-list' },
      ...(items.length ? items : [el('li', { text: 'Nothing yet.' })])));
  }
  const more = $('activity-more');
  more.hidden = !(r && r.next_before);
  more.onclick = () => page(r.next_before).catch((e) => { $('activity-error').textContent = e.message; });
}

export const loadActivity = section('activity', 'Security activity', () => page());
