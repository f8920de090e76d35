# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An inline kubeconfig's bearer token is never logged (issue 34: it was printed at -vvv): every k8s_* module's
connection options (k8s_api.connection_argspec) mark the kubeconfig, api_key and password no_log, so AnsibleModule
masks their values in the invocation and in anything the module returns."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api

TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.c2VjcmV0LXRva2Vu.sig"
KUBECONFIG = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443"}}],
              "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
              "users": [{"name": "u", "user": {"token": TOKEN}}]}


@pytest.mark.parametrize("option, value", [("kubeconfig", KUBECONFIG), ("api_key", TOKEN), ("password", TOKEN)])
def test_secrets_of_the_connection_options_are_masked(option, value):
    with patch_module_args({option: value}):
        module = basic.AnsibleModule(argument_spec=k8s_api.connection_argspec())
    assert TOKEN in module.no_log_values
    shown = repr(remove_values(module.params, module.no_log_values))
    assert TOKEN not in shown
