# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # Standard attribute descriptions; modules write only support/details.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
      - This assumes that the system controlled/queried by the module has not changed in a relevant way.
"""

    # Benchmarks: generate load, change nothing that lasts (each module adds its check_mode details).
    BENCHMARK = r"""
options: {}
attributes:
  check_mode:
    support: partial
  diff_mode:
    support: none
  idempotent:
    support: N/A
    details: A benchmark changes nothing that lasts; it always reports C(changed=false).
"""

    RESULTS = r"""
options: {}
notes:
  - Every module of this collection returns C(results), a list of result records. The record contract is described in
    the collection's C(docs/results.md) and its JSON Schema in C(docs/results.schema.json).
  - A benchmark binary that is not installed gives one C(error) record per check it would have run, whose reason names
    the binary and how to install it; the task itself does not fail, so the other hosts and checks go on.
  - Numeric options outside their documented range (see each option) fail the task before anything runs, with every
    offending option named in one message.
"""
