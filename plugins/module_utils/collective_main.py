# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``main()`` of the collective benchmark modules, nccl_test and hccl_test, shares (private).

Both run one binary per collective over a size sweep, launched by launch.run_module, and take the same options
for it; each module adds its own options, ranges and size defaults:

- ``SPEC`` - the options both tools share (documented in each module, as their wording differs): the
  collectives and where their binaries are, the sweep's step, the result check, the reduction, the ranks'
  environment and ranks per host, plus launch.COLLECTIVE_SPEC (documented in the ``_collective_launch`` doc
  fragment), the profile options and ``expect``;
- ``RANGES`` - the ranges of the shared options whose bounds do not differ between the tools;
- ``module(module_class, spec, ranges)`` - builds the module (argspec.module: ``SPEC`` plus ``spec``, every
  range checked first; import mode and ``hosts`` exclusive); the module's ``main()`` hands it to
  launch.run_module with ``USER_ERRORS``, the exception types whose message is the whole answer (bad options
  and expectations, without a traceback).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, collectives, expectations, launch

SPEC = dict(
    collectives=dict(type="list", elements="str", default=["all_reduce"]),
    binary_dir=dict(type="path"),
    if_missing=dict(type="str", choices=["error", "skip"], default="error"),
    step_factor=dict(type="int", default=2),
    step_bytes=dict(type="int"),
    check=dict(type="int"),
    datatype=dict(type="str"),
    op=dict(type="str"),
    root=dict(type="int"),
    env=dict(type="dict", default={}),
    ranks_per_node=dict(type="int", default=0),
    **launch.COLLECTIVE_SPEC,
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)

RANGES = dict(launch.COLLECTIVE_RANGES, step_factor=argspec.POSITIVE, root=argspec.NON_NEGATIVE,
              ranks_per_node=argspec.NON_NEGATIVE)
USER_ERRORS = (collectives.OptionError, expectations.ExpectationError)


def module(module_class, spec, ranges):
    """The module, built from the shared and its own options, every range checked (see the module docstring)."""
    return argspec.module(
        module_class, dict(RANGES, **ranges), argument_spec=dict(SPEC, **spec),
        mutually_exclusive=[("from_output", "hosts")], supports_check_mode=True)
