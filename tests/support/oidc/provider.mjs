// A real OAuth 2.1 / OpenID authorization server for the OAuth tests: oidc-provider, configured
// from one JSON object (argv[2], else $OIDC_PROVIDER_CONFIG), on 127.0.0.1.
//
// {
//   "port": 0,                                   // 0: any free port, chosen at listen time
//   "resources": ["http://127.0.0.1:8000/mcp"],  // resource indicators (RFC 8707) it serves
//   "scopes": ["notes:read", "notes:write"],     // the scopes each of those resources knows
//   "access_token_ttl": 600,                     // seconds
//   "clients": {                                 // credentials of the static clients
//     "machine":         { "client_id": "...", "client_secret": "..." },
//     "opaque":          { "client_id": "...", "client_secret": "..." },
//     "resource_server": { "client_id": "...", "client_secret": "..." },
//     "public":          { "client_id": "..." },
//     "upstream":        { "client_id": "...", "client_secret": "...",   // optional
//                          "redirect_uris": ["http://127.0.0.1:8000/auth/callback"] }
//   },
//   "registration": true                         // false: no dynamic registration
// }
//
// The optional "upstream" client is what a provider such as GitHub or Google has for an
// mcpserve OIDCProxy: confidential (client_secret_basic), registered by hand with its exact
// redirect URIs, the authorization code grant with refresh tokens, OpenID scopes; its access
// tokens (no resource asked) are opaque and good at the userinfo endpoint.
//
// oidc-provider is pinned to 8.x (package.json), the newest line that supports Node 20.
// Access tokens for a configured resource are RS256 JWTs (RFC 9068, typ at+jwt) whose aud is
// that resource and whose scope is the requested scopes the resource knows; only the "opaque"
// client gets opaque tokens for the same resources instead: the resource_server client may
// introspect them, and (8.x) only the client a token was issued to may revoke it. A token
// request may carry a test-only `ttl` parameter (seconds) that sets that one token's life.
// Login and consent are oidc-provider's devInteractions (HTML forms, any username and password).
// Discovery is served at /.well-known/openid-configuration and, with the same document, at the
// RFC 8414 /.well-known/oauth-authorization-server. Once listening it prints one line,
// `READY <issuer>`, on stdout (the library's own messages go to stderr); it exits when stdin
// closes, or on SIGTERM / SIGINT.

import * as crypto from 'node:crypto';
import * as http from 'node:http';

// oidc-provider writes notices with console.info; stdout is for the READY line only.
console.log = console.error;
console.info = console.error;

const { default: Provider, errors } = await import('oidc-provider');

const config = JSON.parse(process.argv[2] ?? process.env.OIDC_PROVIDER_CONFIG ?? '{}');
const resources = new Map(config.resources.map((resource) => [new URL(resource).href, resource]));
const scopes = config.scopes;
const accessTokenTTL = config.access_token_ttl ?? 600;
const { machine, opaque, resource_server: resourceServer, public: publicClient, upstream } = config.clients;
const registration = config.registration ?? true;

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(config.port ?? 0, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

// The test-only `ttl` token request parameter, or the configured lifetime.
function tokenTTL(ctx) {
  const requested = Number.parseInt(ctx?.oidc?.body?.ttl, 10);
  return requested > 0 ? requested : accessTokenTTL;
}

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), alg: 'RS256', use: 'sig' };

const noRedirects = { redirect_uris: [], response_types: [] };

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  clients: [
    {
      client_id: machine.client_id,
      client_secret: machine.client_secret,
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_basic',
      ...noRedirects,
    },
    {
      client_id: opaque.client_id,
      client_secret: opaque.client_secret,
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_basic',
      ...noRedirects,
    },
    {
      client_id: resourceServer.client_id,
      client_secret: resourceServer.client_secret,
      grant_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      ...noRedirects,
    },
    {
      // A native app (RFC 8252): on a loopback http redirect URI any port matches.
      client_id: publicClient.client_id,
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback', 'http://localhost/callback'],
    },
    ...(upstream
      ? [
          {
            client_id: upstream.client_id,
            client_secret: upstream.client_secret,
            token_endpoint_auth_method: 'client_secret_basic',
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            redirect_uris: upstream.redirect_uris,
          },
        ]
      : []),
  ],
  // OAuth 2.1: the authorization code flow only, no implicit or hybrid response types.
  responseTypes: ['code'],
  // Registered clients may only ask for supported scopes, so the resource scopes are listed too.
  scopes: ['openid', 'offline_access', 'profile', 'email', ...scopes],
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: {
      enabled: true,
      // The resource server introspects any token; another client only its own.
      async allowedPolicy(ctx, client, token) {
        return client.clientId === resourceServer.client_id || token.clientId === client.clientId;
      },
    },
    revocation: { enabled: true }, // 8.x: a token is revoked by its own client only
    registration: { enabled: registration, initialAccessToken: false },
    resourceIndicators: {
      enabled: true,
      // A resource granted at the authorization endpoint need not be repeated at the token one.
      async useGrantedResource() {
        return true;
      },
      async getResourceServerInfo(ctx, indicator, client) {
        let configured;
        try {
          configured = resources.get(new URL(indicator).href);
        } catch {
          configured = undefined;
        }
        if (configured === undefined) {
          throw new errors.InvalidTarget(`${indicator} is not a resource of this server`);
        }
        const format = client.clientId === opaque.client_id ? 'opaque' : 'jwt';
        return {
          audience: configured,
          scope: scopes.join(' '),
          accessTokenTTL: tokenTTL(ctx),
          accessTokenFormat: format,
          ...(format === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
  // A client allowed the refresh_token grant gets a refresh token, offline_access or not.
  async issueRefreshToken(ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  ttl: {
    AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? tokenTTL(ctx),
    ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? tokenTTL(ctx),
    AuthorizationCode: 60,
    DeviceCode: 600,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
});

provider.on('server_error', (ctx, error) => console.error('server_error', error));

const handle = provider.callback();
server.on('request', (req, res) => {
  // RFC 8414 metadata: the issuer has no path, so it is the same document as OpenID discovery.
  const url = new URL(req.url, issuer);
  if (url.pathname === '/.well-known/oauth-authorization-server') {
    req.url = `/.well-known/openid-configuration${url.search}`;
  }
  handle(req, res);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}

process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();

process.stdout.write(`READY ${issuer}\n`);
