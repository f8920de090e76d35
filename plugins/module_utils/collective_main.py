# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``main()`` of the collective benchmark modules, nccl_test and hccl_test, shares (private).

Both run one binary per collective over a size sweep, launched by launch.run_module; their tool adapter's
``OPTIONS`` holds the options of the run (tools/nccl_tests.py, tools/hccl.py, sharing tools/_collective.py's):

- ``SPEC`` - what both modules add to the adapter's ``OPTIONS``: the _mpirun.COLLECTIVE_SPEC options that are
  the module's plumbing, not the run's (``hosts``, ``run_id`` and import mode's ``from_output``,
  ``collective``, ``node_count``; documented in the ``_collective_launch`` doc fragment);
- ``RANGES`` - the ranges of the shared options whose bounds do not differ between the tools;
- ``module(module_class, spec, ranges)`` - builds the module (argspec.module: ``SPEC`` plus ``spec``, the
  adapter's ``OPTIONS`` and the module's own, every range checked first; import mode and ``hosts`` exclusive);
  the module's ``main()`` hands it to launch.run_module with ``USER_ERRORS``, the exception types whose message
  is the whole answer (bad options and expectations, without a traceback).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, expectations
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective, _mpirun

SPEC = dict((name, spec) for name, spec in _mpirun.COLLECTIVE_SPEC.items() if name not in _collective.LAUNCH_OPTIONS)

RANGES = dict(_mpirun.COLLECTIVE_RANGES, step_factor=argspec.POSITIVE, root=argspec.NON_NEGATIVE,
              ranks_per_node=argspec.NON_NEGATIVE)
USER_ERRORS = (_mpirun.OptionError, expectations.ExpectationError)


def module(module_class, spec, ranges):
    """The module, built from the shared and its own options, every range checked (see the module docstring)."""
    return argspec.module(
        module_class, dict(RANGES, **ranges), argument_spec=dict(SPEC, **spec),
        mutually_exclusive=[("from_output", "hosts")], supports_check_mode=True)
