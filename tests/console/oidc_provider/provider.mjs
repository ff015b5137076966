// The OIDC provider of the console's sign-in tests (`OidcProvider` in tests/console/helpers.py starts it): the npm
// package oidc-provider on 127.0.0.1, one static confidential client that must use PKCE (S256),
// RP-initiated logout, and its own login page checking the passwords of the users in USERS_FILE
// (JSON: {"alice": {"password": "...", "claims": {"email": "...", "groups": ["..."]}}}), read at
// every request so that a test changes a user's claims between two sign-ins. A user's "id_token"
// entry ({"aud": [...], "azp": "..."}) is set over the ID token's own claims, and the token signed
// again with the provider's key, as a provider issuing a token for several audiences does. Pages
// load nothing from elsewhere. Prints "ready <issuer>" once it listens.
import crypto from 'node:crypto';
import http from 'node:http';
import fs from 'node:fs';
import { URLSearchParams } from 'node:url';

import Provider from 'oidc-provider';

const env = (name) => {
  if (!process.env[name]) throw new Error(`${name} is required`);
  return process.env[name];
};
const port = Number(env('PORT'));
const issuer = `http://127.0.0.1:${port}`;
const users = () => JSON.parse(fs.readFileSync(env('USERS_FILE'), 'utf8'));
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body><h1>${escape(title)}</h1>${body}</body></html>`;

// The signing key, made at each start (its public half is served at the provider's jwks_uri).
const signingKey = { ...crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: 'test-signing-key', use: 'sig', alg: 'RS256' };
const signingKeyObject = crypto.createPrivateKey({ key: signingKey, format: 'jwk' });

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  clients: [{
    client_id: env('CLIENT_ID'),
    client_secret: env('CLIENT_SECRET'),
    redirect_uris: [env('REDIRECT_URI')],
    post_logout_redirect_uris: [env('POST_LOGOUT_REDIRECT_URI')],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  pkce: { methods: ['S256'], required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name'], groups: ['groups'] },
  cookies: { keys: ['cleanline-test-provider-cookie-key'] },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page('Sign out', `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes"
          id="provider-logout">Yes, sign me out</button>`);
      },
      postLogoutSuccessSource: async (ctx) => { ctx.body = page('Signed out', '<p>You are signed out.</p>'); },
    },
  },
  findAccount: async (ctx, id) => {
    const user = users()[id];
    if (!user) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, preferred_username: id, ...user.claims }) };
  },
  // The client is first-party: the scopes it asks for are granted without a consent page.
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      if (grant) return grant;
    }
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId,
                                                accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  renderError: async (ctx, out) => { ctx.body = page('Error', `<pre id="provider-error">${escape(JSON.stringify(out))}</pre>`); },
  ttl: { Session: 3600, Interaction: 600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
});

// An ID token with the user's "id_token" entry set over its claims, signed again (RS256, the same key).
const issue = provider.IdToken.prototype.issue;
provider.IdToken.prototype.issue = async function issueWithOverrides(options) {
  const token = await issue.call(this, options);
  const [header, body] = token.split('.');
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  const overrides = options?.use === 'idtoken' ? users()[claims.sub]?.id_token : undefined;
  if (!overrides) return token;
  const input = `${header}.${Buffer.from(JSON.stringify({ ...claims, ...overrides })).toString('base64url')}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), signingKeyObject).toString('base64url')}`;
};

const readForm = (req) => new Promise((resolve, reject) => {
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => resolve(new URLSearchParams(body)));
  req.on('error', reject);
});

const loginForm = (uid, error) => page('Sign in to the test provider', `${error ? `<p id="login-error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
<label>Username <input name="login" id="login"></label>
<label>Password <input name="password" type="password" id="password"></label>
<button type="submit" id="provider-submit">Sign in</button></form>`);

const interactions = async (req, res, uid, login) => {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  if (!login) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(loginForm(uid, ''));
    return;
  }
  const form = await readForm(req);
  const user = users()[form.get('login')];
  if (!user || user.password !== form.get('password')) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(loginForm(uid, 'Wrong username or password.'));
    return;
  }
  await provider.interactionFinished(req, res, { login: { accountId: form.get('login') } },
    { mergeWithLastSubmission: false });
};

const callback = provider.callback();
http.createServer((req, res) => {
  const match = req.url.match(/^\/interaction\/([^/?]+)(\/login)?/);
  if (!match) {
    callback(req, res);
    return;
  }
  interactions(req, res, match[1], Boolean(match[2]) && req.method === 'POST').catch((error) => {
    res.statusCode = 400;
    res.end(page('Error', `<pre>${escape(error.message)}</pre>`));
  });
}).listen(port, '127.0.0.1', () => { console.log(`ready ${issuer}`); });
