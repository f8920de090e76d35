#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: dcgm_diag
short_description: Run NVIDIA DCGM diagnostics on a GPU node and make one record per test and GPU
version_added: 1.2.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Runs C(dcgmi diag -r <level> -j) (NVIDIA Data Center GPU Manager; DGX OS and the GPU operator ship it) and makes
    one C(gpu.dcgm_diag) record for every test and entity the output reports (a GPU, or the GPUs a deployment test
    covered as one, C(0,1,2,3)). The record's status is DCGM's (C(Pass) pass, C(Fail) fail, C(Warn) warn, C(Skip) and
    C(Not Run) skip); C(facts.codes) holds the C(DCGM_FR_*) names of the result's warnings (their C(error_id), named
    as NVIDIA's DCGM dcgm_errors.h names them), C(facts.messages) their text, C(facts.info) DCGM's information lines,
    and the reason quotes the code and message of each warning.
  - Reads the output layouts of DCGM 2.x/3.x (C(DCGM GPU Diagnostic), C(gpu_ids)) and 4.x (C(DCGM Diagnostic),
    C(entity_group)/C(entity_id), C(test_summary), C(metadata)), with anything dcgmi prints before the document.
  - A host without C(dcgmi) gets one C(skip) record with the install hint. An output with no readable document (the
    host engine not running, a cut-off output) is one C(error) record quoting what dcgmi said, its output in C(raw);
    a DCGM runtime error is an C(error) record too. dcgmi exits non-zero when a test fails; the records still come
    from its output (C(params.rc) keeps the exit status).
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark]
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no diagnostic.
options:
  level:
    description:
      - The diagnostic suite, C(dcgmi diag -r <level>). 1 quick deployment checks (seconds), 2 medium (about two
        minutes), 3 long hardware diagnostics (about 15 minutes), 4 extended.
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  dcgmi_path:
    description:
      - The dcgmi to run; by default the one on PATH.
      - It is executed, so it and every directory on its way must be writable by nobody but root and the module's
        user; otherwise the task fails and says why.
    type: path
  host_engine:
    description:
      - The DCGM host engine to run the diagnostic on, C(dcgmi diag --host <host_engine>) (for example the GPU
        operator's C(nvidia-dcgm) service, C(host:5555)); by default dcgmi's own (localhost).
    type: str
  timeout_s:
    description:
      - Seconds dcgmi may run; it is killed at it and the record is C(error).
      - By default by level, 300 (1), 900 (2), 3600 (3), 10800 (4), several times the duration the dcgmi diag reference
        gives each level. Must be 1 or more.
    type: int
  from_output:
    description: Import mode, a saved C(dcgmi diag -j) output (a file on the host the module runs on) to make the records of.
    type: path
"""

EXAMPLES = r"""
- name: DCGM long diagnostics (level 3) on every GPU node
  aifabric.acceptance.dcgm_diag:
    level: 3

- name: Read a saved dcgmi diag -j output
  aifabric.acceptance.dcgm_diag:
    from_output: /srv/aifabric/captures/node07-dcgmi-diag-r3.json
  delegate_to: localhost
"""

RETURN = r"""
results:
  description:
    - The C(gpu.dcgm_diag) records (docs/results.md), one per test and entity; C(target) the entity (a GPU index, or
      the GPU list a test covered at once); C(facts) C(test), C(category), C(entity_group), C(codes), C(messages),
      C(info), C(dcgm_version) (fleet drift compares it), C(driver_detected); C(metrics.warnings_count); C(params) C(argv), C(level), C(rc).
  returned: always
  type: list
  elements: dict
cmd:
  description: The argv that ran (or would run, in check mode).
  returned: when dcgmi was found
  type: list
  elements: str
counts:
  description: Records per status.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, probe_host, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import dcgm_diag as dcgm

RANGES = {"timeout_s": argspec.POSITIVE}
SPEC = dict(dcgm.OPTIONS, from_output=dict(type="path"))


def _dcgm(module):
    params = module.params
    if params["from_output"]:
        records = dcgm.from_output(params["from_output"], params)
        return dict(changed=False, results=records, counts=results.count(records))

    def which(name):
        return module.get_bin_path(name, required=False)
    # the dcgmi the user names is executed (often as root): it must pass the path rule (runner.checked_file)
    params = dict(params, dcgmi_path=runner.checked_file(params["dcgmi_path"]))
    if module.check_mode:
        dcgmi = params["dcgmi_path"] or which("dcgmi")
        return dict(changed=False, cmd=dcgm.diag_argv(dcgmi, params) if dcgmi else None, results=[], counts={})
    host = probe_host.module_host(module)
    records = dcgm.records(host, params)
    out = dict(changed=False, results=records, counts=results.count(records))
    argv = (records[0].get("params") or {}).get("argv") if records else None
    if argv:
        out["cmd"] = argv
    return out


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "dcgm_diag", _dcgm, fields={"results": []})


if __name__ == "__main__":
    main()
