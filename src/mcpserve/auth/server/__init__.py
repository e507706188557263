"""mcpserve as the OAuth authorization server of its own MCP endpoint, in front of an identity
provider: the parts of :class:`~mcpserve.auth.OIDCProxy` (``auth/oidc_proxy.py``).

* :mod:`.authorization_server`: what the endpoints share once mounted (metadata, clients,
  granted scopes, issuing tokens, the provider's token for a handler);
* :mod:`.browser`: ``/authorize``, the consent page's answer, the provider's callback;
* :mod:`.backchannel`: ``/token``, ``/revoke``, ``/register``, the metadata and keys;
* :mod:`.upstream`: the provider (discovery, code exchange, refresh, who logged in);
* :mod:`.records`: what is remembered on the shared store, for how long;
* :mod:`.consent`, :mod:`.pkce`, :mod:`.redirects`, :mod:`.registration`,
  :mod:`.client_metadata`, :mod:`.signing`: one check or one kind of token each;
* :mod:`.web`: the little HTTP the endpoints speak over ASGI; :mod:`.errors`: their errors.
"""
