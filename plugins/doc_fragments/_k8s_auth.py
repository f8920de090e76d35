# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The Kubernetes connection options of every k8s_* module: the names and behaviour of kubernetes.core
    # (spec: k8s_api.connection_argspec()).
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description: Path to a kubeconfig, or a dict holding a whole kubeconfig (as C(kubernetes.core)). Env C(K8S_AUTH_KUBECONFIG).
    type: raw
  # the string options of the API server's address and credentials, one a line
  context: {type: str, description: The kubeconfig context to use. Env C(K8S_AUTH_CONTEXT).}
  host: {type: str, description: URL of the API server. Env C(K8S_AUTH_HOST).}
  api_key: {type: str, description: Token for the API server. Env C(K8S_AUTH_API_KEY).}
  username: {type: str, description: User name for basic authentication. Env C(K8S_AUTH_USERNAME).}
  password: {type: str, description: Password for basic authentication. Env C(K8S_AUTH_PASSWORD).}
  validate_certs:
    description: Verify the API server's certificate. Env C(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description: CA certificate of the API server. Env C(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Client certificate. Env C(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description: Client key. Env C(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description: HTTP proxy URL for the API server.
    type: str
  no_proxy:
    description: Hosts to reach without the proxy.
    type: str
  proxy_headers:
    description: Proxy headers.
    type: dict
    suboptions:
      proxy_basic_auth:
        description: C(user:password) for the proxy.
        type: str
      basic_auth:
        description: C(user:password) basic authentication header.
        type: str
      user_agent:
        description: User-Agent header.
        type: str
"""
