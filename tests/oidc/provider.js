// An OpenID provider for the sign-in tests: the certified `oidc-provider` package, laid out like a
// Keycloak realm (/realms/<realm>/protocol/openid-connect/{auth,token,userinfo,certs,logout} and
// /realms/<realm>/.well-known/openid-configuration), signing RS256 ID tokens that carry a `groups` claim.
//
// Usage: node provider.js CONFIG.json
// CONFIG: {"host", "port" (0 picks one), "realm", "client": {client_id, client_secret, redirect_uris,
//          post_logout_redirect_uris}, "users": {"<username>": {password, sub, email, given_name,
//          family_name, groups}}}
// Prints one JSON line {"issuer": "..."} on stdout once it listens.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const prefix = `/realms/${config.realm}`;
const loginPrefix = `${prefix}/login-actions/`;
const accounts = new Map(Object.entries(config.users).map(([username, user]) => [user.sub, { username, ...user }]));

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

function page(title, body) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>`
    + `<body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

function loginForm(uid, error) {
  return page(`Sign in to ${config.realm}`, `${error ? `<p id="error">${escapeHtml(error)}</p>` : ''}
    <form method="post" action="${loginPrefix}${uid}">
      <label>Username <input id="username" name="username" autocomplete="off" required></label>
      <label>Password <input id="password" name="password" type="password" required></label>
      <button id="kc-login" type="submit">Sign In</button>
    </form>`);
}

async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

// The realm's signing key: RS256, generated at each start like a fresh realm.
const signingKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
signingKey.kid = crypto.randomUUID();
signingKey.use = 'sig';
signingKey.alg = 'RS256';

const server = http.createServer();
await new Promise((resolve) => server.listen(config.port || 0, config.host || '127.0.0.1', resolve));
const { address, port } = server.address();
const issuer = `http://${address}:${port}${prefix}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.client.client_id,
    client_secret: config.client.client_secret,
    redirect_uris: config.client.redirect_uris,
    post_logout_redirect_uris: config.client.post_logout_redirect_uris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    id_token_signed_response_alg: 'RS256',
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  // Keycloak's group mapper puts `groups` in the ID token and userinfo; scope claims go in the ID token too.
  claims: {
    openid: ['sub', 'groups'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name', 'given_name', 'family_name'],
  },
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      // Keycloak ends the session without asking when the request carries an id_token_hint.
      logoutSource: async (ctx, form) => {
        ctx.body = page('Signing out', `${form}<button id="confirm-logout" type="submit" form="op.logoutForm"
          name="logout" value="yes">Sign out</button><script>document.getElementById('confirm-logout').click()</script>`);
      },
      postLogoutSuccessSource: async (ctx) => {
        ctx.body = page('Signed out', '<p>You are signed out.</p>');
      },
    },
  },
  routes: {
    authorization: '/protocol/openid-connect/auth',
    token: '/protocol/openid-connect/token',
    userinfo: '/protocol/openid-connect/userinfo',
    jwks: '/protocol/openid-connect/certs',
    end_session: '/protocol/openid-connect/logout',
  },
  interactions: { url: (ctx, interaction) => `${loginPrefix}${interaction.uid}` },
  // First-party client: consent is implied, as for a Keycloak client without "Consent required".
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const existing = await ctx.oidc.provider.Grant.find(grantId);
      if (existing) return existing;
    }
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope(ctx.oidc.params.scope || 'openid');
    await grant.save();
    return grant;
  },
  findAccount: async (ctx, sub) => {
    const user = accounts.get(sub);
    if (!user) return undefined;
    return {
      accountId: sub,
      claims: async () => ({
        sub,
        preferred_username: user.username,
        email: user.email,
        email_verified: true,
        given_name: user.given_name,
        family_name: user.family_name,
        name: `${user.given_name} ${user.family_name}`.trim(),
        groups: user.groups,
      }),
    };
  },
  ttl: { Session: 3600, Interaction: 600, Grant: 3600, IdToken: 300, AccessToken: 300, AuthorizationCode: 60 },
});

const providerCallback = provider.callback();

async function interaction(req, res, uid) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) {
    res.writeHead(400).end('interaction mismatch');
    return;
  }
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginForm(uid));
    return;
  }
  const form = await readForm(req);
  const user = config.users[form.get('username')];
  if (!user || user.password !== form.get('password')) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginForm(uid, 'Invalid username or password.'));
    return;
  }
  await provider.interactionFinished(req, res, { login: { accountId: user.sub } }, { mergeWithLastSubmission: false });
}

server.on('request', (req, res) => {
  const url = req.url || '/';
  if (url.startsWith(loginPrefix)) {
    interaction(req, res, url.slice(loginPrefix.length).split(/[?/]/)[0]).catch((error) => {
      res.writeHead(500).end(String(error));
    });
    return;
  }
  if (url === prefix || url.startsWith(`${prefix}/`)) {
    // Mounted under the realm's path the way Express mounts it: originalUrl keeps the prefix.
    req.originalUrl = url;
    req.url = url.slice(prefix.length) || '/';
    providerCallback(req, res);
    return;
  }
  res.writeHead(404).end('not found');
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
